//! The environment lookup: configuration (API keys, base URLs) is read through an injected
//! function, so tests never mutate the process environment.

/// Looks a variable up by name; `None` when it is not set. Any `Fn(&str) -> Option<String>`
/// that is `Send + Sync` is one (a closure over a map in tests, [`process_env`] in binaries);
/// borrowed as `&dyn EnvLookup`, shared as `Arc<dyn EnvLookup>`.
pub trait EnvLookup: Fn(&str) -> Option<String> + Send + Sync {}

impl<F> EnvLookup for F where F: Fn(&str) -> Option<String> + Send + Sync + ?Sized {}

/// The real process environment, for binaries: the only function of this crate that reads
/// it, and only binaries pass it. A variable that is set but not valid Unicode counts as unset.
#[must_use]
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}
