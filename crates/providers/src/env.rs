//! Configuration from the environment through an injectable lookup (`types::EnvLookup`), so
//! tests never mutate the process environment and binaries pass `types::process_env`.

use model::ModelError;
use types::EnvLookup;

/// The variable's value, `None` when unset or blank (a blank variable is treated as unset so an
/// `export X=` in a shell script does not override a default with "").
pub(crate) fn optional(env: &dyn EnvLookup, name: &str) -> Option<String> {
    env(name)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// A required secret.
///
/// # Errors
/// [`ModelError::MissingKey`] naming `provider` and the exact variable when it is unset or blank.
pub(crate) fn required_key(
    env: &dyn EnvLookup,
    provider: &str,
    name: &str,
) -> Result<String, ModelError> {
    optional(env, name).ok_or_else(|| ModelError::MissingKey {
        provider: provider.to_owned(),
        var: name.to_owned(),
    })
}

/// `base` without trailing slashes, so `{base}/chat/completions` never has `//`.
pub(crate) fn trim_base(base: &str) -> String {
    base.trim_end_matches('/').to_owned()
}
