//! The client against the fixture server process, and the server through an `rmcp` client.

mod backtest;
mod client;
mod server;
mod stdio;
