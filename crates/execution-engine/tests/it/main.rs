//! Integration tests of the execution engine: validation, the simulated broker and the tick's order handling, with property tests.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod broker;
mod broker_props;
mod stops;
mod tick;
mod validate;
mod validate_props;
