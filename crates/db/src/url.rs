//! Showing a database URL without its secrets.

use std::borrow::Cow;

/// Query parameters whose value is a secret (libpq's and sqlx's names).
const SECRET_PARAMS: [&str; 3] = ["password", "sslpassword", "passfile"];

/// `url` as it may be shown — printed, logged, put in a report or an error message: the password
/// of `scheme://user:password@host/...` and the values of `password`/`sslpassword`/`passfile`
/// query parameters are replaced by `***`. A URL without secrets is returned as it is.
///
/// ```
/// assert_eq!(
///     db::redact_url("postgres://trader:hunter2@db.internal:5432/agents?sslmode=require&password=x"),
///     "postgres://trader:***@db.internal:5432/agents?sslmode=require&password=***"
/// );
/// assert_eq!(db::redact_url("sqlite:///tmp/sim.db?mode=rwc"), "sqlite:///tmp/sim.db?mode=rwc");
/// ```
#[must_use]
pub fn redact_url(url: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let (head, query) = match url.split_once('?') {
        Some((head, query)) => (head, Some(query)),
        None => (url, None),
    };
    let mut changed = false;
    match head.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            out.push_str(scheme);
            out.push_str("://");
            // The user info ends at the last `@` of the authority (a password may hold `@`).
            match authority.rsplit_once('@') {
                Some((userinfo, host)) => {
                    match userinfo.split_once(':') {
                        Some((user, _password)) => {
                            out.push_str(user);
                            out.push_str(":***");
                            changed = true;
                        }
                        None => out.push_str(userinfo),
                    }
                    out.push('@');
                    out.push_str(host);
                }
                None => out.push_str(authority),
            }
            out.push_str(path);
        }
        None => out.push_str(head),
    }
    if let Some(query) = query {
        out.push('?');
        for (i, pair) in query.split('&').enumerate() {
            if i > 0 {
                out.push('&');
            }
            match pair.split_once('=') {
                Some((key, _)) if SECRET_PARAMS.contains(&key.to_ascii_lowercase().as_str()) => {
                    out.push_str(key);
                    out.push_str("=***");
                    changed = true;
                }
                _ => out.push_str(pair),
            }
        }
    }
    if changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(url)
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn secrets_are_hidden_and_the_rest_is_kept() {
        for (url, shown) in [
            ("postgres://u:p@h/db", "postgres://u:***@h/db"),
            ("postgresql://u:p%40ss@h:5432", "postgresql://u:***@h:5432"),
            ("postgres://u:p@ss@h/db", "postgres://u:***@h/db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            (
                "postgres://h/db?user=u&PASSWORD=p",
                "postgres://h/db?user=u&PASSWORD=***",
            ),
            (
                "postgres://u:p@h/db?sslpassword=k&sslmode=verify-full",
                "postgres://u:***@h/db?sslpassword=***&sslmode=verify-full",
            ),
            ("sqlite::memory:", "sqlite::memory:"),
            (
                "sqlite://out/sim.db?mode=rwc",
                "sqlite://out/sim.db?mode=rwc",
            ),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }
}
