//! Integration tests of reflection: cadence, invariants, the reflection job, the skill lint, notes and trade statistics.
//!
//! One test binary for the crate: each module below was its own integration-test binary, and
//! linking one binary instead of several is most of what a rebuild costs on a 2-core machine.

mod cadence;
mod common;
mod defences;
mod invariants;
mod job;
mod lint;
mod notes;
mod outside_honest;
mod outside_hostile;
mod realistic;
mod stats;
