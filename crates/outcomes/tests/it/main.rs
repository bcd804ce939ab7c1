//! Integration tests of `outcomes`: the indicators against reference values computed
//! independently (pandas + ta, `tests/fixtures/gen_reference.py`) and the scorer over
//! hand-built bar paths.

mod common;
mod indicators;
mod recall;
mod scorer;
