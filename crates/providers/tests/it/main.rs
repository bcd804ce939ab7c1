//! Integration tests of the model providers: the Anthropic and OpenAI transports, provider resolution and running a skill.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod anthropic;
mod common;
mod deadline;
mod openai;
mod resolve;
mod run_skill;
