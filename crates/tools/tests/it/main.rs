//! Integration tests of the tools: their definitions and outputs, text formatting, property tests and the `mock` feature.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod mock;
mod props;
mod recall;
mod text_format;
mod tools;
