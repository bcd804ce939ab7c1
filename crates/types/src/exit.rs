//! How the command lines say "bad input": one exit code and one marker error for both binaries.

/// The exit code of a command whose input was bad — a flag, a file it names, an id it does not
/// know —: nothing was done, stderr says what was wrong. Clap's own usage errors exit 2 too.
/// Any other failure (a database that cannot be reached, an exchange that fails) exits 1.
pub const EXIT_BAD_INPUT: u8 = 2;

/// An error that is the input's fault, said in full (the flag or file named first). A binary
/// exits [`EXIT_BAD_INPUT`] with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);
