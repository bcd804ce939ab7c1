//! Who is calling: an HS256 JWT with Supabase-style claims (`sub` = the user's UUID, `role` =
//! `authenticated`, `exp`), from `Authorization: Bearer <JWT>` or, for the HTML pages, a
//! `token` cookie. The secret comes from [`JWT_SECRET_ENV`]; the server does not start without
//! it. [`Caller`] is the one extractor every user route takes.
//!
//! A token is refused (401) when it is expired, not valid yet (`nbf` in the future), issued in
//! the future (`iat`), or lives longer than the maximum lifetime ([`MAX_LIFETIME_ENV`],
//! [`DEFAULT_MAX_LIFETIME_DAYS`] days by default): `exp − iat`, and `exp − now` whether or not
//! the token has an `iat` — so a token valid until the year 3000 is refused however it is
//! dated. Each time check tolerates [`LEEWAY_SECS`] of clock skew.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::header::{AUTHORIZATION, COOKIE};
use axum::http::request::Parts;
use chrono::{DateTime, Duration, Utc};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::AppState;
use super::error::ApiError;

/// The environment variable holding the HS256 secret (the Supabase project's JWT secret in
/// production). `serve` refuses to start without it, `token` signs with it.
pub const JWT_SECRET_ENV: &str = "AGENT_JWT_SECRET";
/// Shortest secret accepted, in bytes (HS256 wants at least its 256-bit output).
pub const MIN_SECRET_BYTES: usize = 32;
/// The only role a user token may carry.
pub const USER_ROLE: &str = db::USER_ROLE;
/// The cookie the pages keep the token in.
pub const TOKEN_COOKIE: &str = "token";
/// Clock skew tolerated on `exp`, `nbf`, `iat` and the lifetime, in seconds.
pub const LEEWAY_SECS: u64 = 5;
/// The environment variable (and `--max-token-lifetime`) holding the longest lifetime a token
/// may have, e.g. `30d`, `12h`.
pub const MAX_LIFETIME_ENV: &str = "AGENT_JWT_MAX_LIFETIME";
/// The default maximum lifetime of a token, in days.
pub const DEFAULT_MAX_LIFETIME_DAYS: i64 = 30;

/// Why the auth configuration or a token was refused.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The secret's variable is unset or blank.
    #[error(
        "{JWT_SECRET_ENV} is not set: the chat server signs and checks HS256 tokens with it \
         (export {JWT_SECRET_ENV}=<at least {MIN_SECRET_BYTES} random bytes>)"
    )]
    MissingSecret,
    /// The secret is too short to be one.
    #[error("{JWT_SECRET_ENV} has {0} bytes; at least {MIN_SECRET_BYTES} are required")]
    ShortSecret(usize),
    /// A token's lifetime must be positive.
    #[error("a token's lifetime must be positive (got {0})")]
    BadTtl(Duration),
    /// A token may not live longer than the maximum the server accepts.
    #[error(
        "a token's lifetime of {} is above the maximum of {} the server accepts \
         (--max-token-lifetime / {MAX_LIFETIME_ENV})",
        days_text(*ttl),
        days_text(*max)
    )]
    TtlAboveMax {
        /// The lifetime asked for.
        ttl: Duration,
        /// The maximum.
        max: Duration,
    },
    /// Signing failed (a library error; should not happen with an HMAC key).
    #[error("signing the token: {0}")]
    Sign(#[from] jsonwebtoken::errors::Error),
}

/// A lifetime for a message: `30d`, or `1d 1h` / `6h 0m` / `45m` in the pages' style.
fn days_text(d: Duration) -> String {
    let s = d.num_seconds();
    if s % 86_400 == 0 {
        format!("{}d", s / 86_400)
    } else {
        types::text::span(s / 60)
    }
}

/// The claims of a user token (Supabase's shape; other claims are ignored; `nbf`, when present,
/// is checked by the decoder).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user's id.
    pub sub: Uuid,
    /// Must be [`USER_ROLE`].
    pub role: String,
    /// Expiry, seconds since the Unix epoch.
    pub exp: i64,
    /// Issued at, seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
}

/// The HS256 keys: signs dev tokens ([`Auth::mint`]) and checks request tokens
/// ([`Auth::verify`]). Cheap to clone.
#[derive(Clone)]
pub struct Auth {
    encoding: Arc<EncodingKey>,
    decoding: Arc<DecodingKey>,
    validation: Arc<Validation>,
    max_lifetime: Duration,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Auth { secret: <redacted> }")
    }
}

impl Auth {
    /// Keys from `secret`, accepting tokens of at most [`DEFAULT_MAX_LIFETIME_DAYS`] days
    /// ([`Auth::with_max_lifetime`] changes it).
    ///
    /// # Errors
    /// [`AuthError::MissingSecret`] for a blank secret, [`AuthError::ShortSecret`] below
    /// [`MIN_SECRET_BYTES`].
    pub fn new(secret: &str) -> Result<Self, AuthError> {
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(AuthError::MissingSecret);
        }
        if secret.len() < MIN_SECRET_BYTES {
            return Err(AuthError::ShortSecret(secret.len()));
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_required_spec_claims(&["exp", "sub"]);
        validation.leeway = LEEWAY_SECS;
        // A token that is not valid yet is refused (within the leeway).
        validation.validate_nbf = true;
        // Supabase tokens carry `aud: authenticated`; the role claim is what we check.
        validation.validate_aud = false;
        Ok(Self {
            encoding: Arc::new(EncodingKey::from_secret(secret.as_bytes())),
            decoding: Arc::new(DecodingKey::from_secret(secret.as_bytes())),
            validation: Arc::new(validation),
            max_lifetime: Duration::days(DEFAULT_MAX_LIFETIME_DAYS),
        })
    }

    /// The same keys, accepting tokens that live at most `max`.
    ///
    /// # Errors
    /// [`AuthError::BadTtl`] for a maximum ≤ 0.
    pub fn with_max_lifetime(mut self, max: Duration) -> Result<Self, AuthError> {
        if max <= Duration::zero() {
            return Err(AuthError::BadTtl(max));
        }
        self.max_lifetime = max;
        Ok(self)
    }

    /// The longest lifetime a token may have.
    #[must_use]
    pub fn max_lifetime(&self) -> Duration {
        self.max_lifetime
    }

    /// Keys from the secret in [`JWT_SECRET_ENV`] of `env`.
    ///
    /// # Errors
    /// As [`Auth::new`]; [`AuthError::MissingSecret`] when the variable is unset.
    pub fn from_env(env: &dyn types::EnvLookup) -> Result<Self, AuthError> {
        let secret = env(JWT_SECRET_ENV).ok_or(AuthError::MissingSecret)?;
        Self::new(&secret)
    }

    /// A user token for `user_id`, valid from `now` for `ttl`.
    ///
    /// # Errors
    /// [`AuthError::BadTtl`] for a lifetime ≤ 0, [`AuthError::TtlAboveMax`] above the maximum
    /// lifetime (the server would refuse the token); [`AuthError::Sign`] if signing fails.
    pub fn mint(
        &self,
        user_id: Uuid,
        ttl: Duration,
        now: DateTime<Utc>,
    ) -> Result<String, AuthError> {
        if ttl <= Duration::zero() {
            return Err(AuthError::BadTtl(ttl));
        }
        if ttl > self.max_lifetime {
            return Err(AuthError::TtlAboveMax {
                ttl,
                max: self.max_lifetime,
            });
        }
        let claims = Claims {
            sub: user_id,
            role: USER_ROLE.to_owned(),
            exp: (now + ttl).timestamp(),
            iat: Some(now.timestamp()),
        };
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &self.encoding,
        )?)
    }

    /// Signs arbitrary claims (tests: expired tokens, other roles, `nbf`, long lifetimes).
    ///
    /// # Errors
    /// [`AuthError::Sign`] if signing fails.
    pub fn sign<C: Serialize>(&self, claims: &C) -> Result<String, AuthError> {
        Ok(jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            claims,
            &self.encoding,
        )?)
    }

    /// The caller a token names: HS256 with this secret, not expired and valid already (`nbf`;
    /// against the wall clock, with [`LEEWAY_SECS`] of leeway), not issued in the future, no
    /// longer-lived than the maximum lifetime, `sub` a UUID, `role` = [`USER_ROLE`].
    ///
    /// # Errors
    /// A 401 [`ApiError`] saying which of those failed.
    pub fn verify(&self, token: &str) -> Result<Caller, ApiError> {
        self.verify_at(token, Utc::now())
    }

    /// [`Auth::verify`] with `now` for the `iat` and lifetime checks (`exp` and `nbf` are the
    /// decoder's, against the wall clock).
    fn verify_at(&self, token: &str, now: DateTime<Utc>) -> Result<Caller, ApiError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|e| {
                ApiError::unauthorized(match e.kind() {
                    ErrorKind::ExpiredSignature => "the token has expired".to_owned(),
                    ErrorKind::ImmatureSignature => {
                        "the token is not valid yet (its `nbf` is in the future)".to_owned()
                    }
                    ErrorKind::InvalidSignature => {
                        "the token's signature does not match (signed with another secret?)"
                            .to_owned()
                    }
                    ErrorKind::InvalidAlgorithm => "the token must be signed with HS256".to_owned(),
                    ErrorKind::MissingRequiredClaim(c) => format!("the token has no `{c}` claim"),
                    ErrorKind::Json(_) | ErrorKind::InvalidClaimFormat(_) => {
                        "the token's claims are malformed (`sub` must be a user UUID)".to_owned()
                    }
                    _ => format!("the token is invalid ({e})"),
                })
            })?;
        self.check_lifetime(&data.claims, now)?;
        if data.claims.role != USER_ROLE {
            return Err(ApiError::unauthorized(format!(
                "the token's role is {:?}; user routes need {USER_ROLE:?}",
                data.claims.role
            )));
        }
        Ok(Caller {
            user_id: data.claims.sub,
        })
    }
}

impl Auth {
    /// Refuses a token issued in the future or living longer than the maximum: `exp − iat` when
    /// it has an `iat`, and `exp − now` always.
    fn check_lifetime(&self, claims: &Claims, now: DateTime<Utc>) -> Result<(), ApiError> {
        let leeway = i64::try_from(LEEWAY_SECS).unwrap_or(i64::MAX);
        let max = self.max_lifetime.num_seconds();
        let now = now.timestamp();
        let too_long = |span: i64, what: &str| {
            ApiError::unauthorized(format!(
                "the token lives too long: {} {what}, above the maximum of {} (mint one with a \
                 shorter lifetime)",
                days_text(Duration::seconds(span)),
                days_text(self.max_lifetime)
            ))
        };
        if let Some(iat) = claims.iat {
            if iat > now.saturating_add(leeway) {
                return Err(ApiError::unauthorized(
                    "the token is issued in the future (its `iat` is after now)",
                ));
            }
            let lifetime = claims.exp.saturating_sub(iat);
            if lifetime > max {
                return Err(too_long(lifetime, "from `iat` to `exp`"));
            }
        }
        let remaining = claims.exp.saturating_sub(now);
        if remaining > max.saturating_add(leeway) {
            return Err(too_long(remaining, "from now to `exp`"));
        }
        Ok(())
    }
}

/// The authenticated caller of a request. Every user route takes it; every store call of the
/// request then runs as this user under row-level security ([`AppState::store_for`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    /// The user the token names (`sub`).
    pub user_id: Uuid,
}

/// The request's token: `Authorization: Bearer <JWT>` first, else the [`TOKEN_COOKIE`] cookie.
#[must_use]
pub fn token_of(parts: &Parts) -> Option<String> {
    if let Some(value) = parts.headers.get(AUTHORIZATION) {
        let value = value.to_str().ok()?.trim();
        let (scheme, token) = value.split_once(' ')?;
        return scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| token.trim().to_owned())
            .filter(|t| !t.is_empty());
    }
    for header in parts.headers.get_all(COOKIE) {
        let Ok(text) = header.to_str() else { continue };
        for pair in text.split(';') {
            if let Some((name, value)) = pair.trim().split_once('=')
                && name == TOKEN_COOKIE
                && !value.is_empty()
            {
                return Some(value.to_owned());
            }
        }
    }
    None
}

/// The caller of a request, or the 401 to answer (for handlers that answer 401 differently,
/// e.g. a page that redirects to its login form).
///
/// # Errors
/// A 401 [`ApiError`] when there is no token or [`Auth::verify`] refuses it.
pub fn caller_of(parts: &Parts, auth: &Auth) -> Result<Caller, ApiError> {
    let token = token_of(parts).ok_or_else(|| {
        ApiError::unauthorized(
            "no token: send `Authorization: Bearer <JWT>` (mint one with `live-runner token`)",
        )
    })?;
    auth.verify(&token)
}

impl<S> FromRequestParts<S> for Caller
where
    AppState: FromRef<S>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let app = AppState::from_ref(state);
        caller_of(parts, &app.auth)
    }
}

/// The address of the pages' login form on a server at `base` (e.g. `http://127.0.0.1:8080`):
/// a token is pasted there and posted in the form's body, never put in a URL.
#[must_use]
pub fn login_url(base: &str) -> String {
    format!("{}/login", base.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn minted_tokens_verify_and_others_do_not() {
        let auth = Auth::new(SECRET).unwrap();
        let user = Uuid::from_u128(7);
        let token = auth.mint(user, Duration::hours(1), Utc::now()).unwrap();
        assert_eq!(auth.verify(&token).unwrap().user_id, user);

        let other = Auth::new("another-secret-another-secret-xx").unwrap();
        let e = other.verify(&token).unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::UNAUTHORIZED);
        assert!(e.message.contains("signature"), "{}", e.message);

        let expired = auth
            .mint(user, Duration::hours(1), Utc::now() - Duration::hours(2))
            .unwrap();
        assert!(
            auth.verify(&expired)
                .unwrap_err()
                .message
                .contains("expired")
        );

        let service = auth
            .sign(&Claims {
                sub: user,
                role: "service_role".into(),
                exp: (Utc::now() + Duration::hours(1)).timestamp(),
                iat: None,
            })
            .unwrap();
        assert!(auth.verify(&service).unwrap_err().message.contains("role"));
        assert!(matches!(Auth::new("short"), Err(AuthError::ShortSecret(5))));
        assert!(matches!(Auth::new("  "), Err(AuthError::MissingSecret)));
    }

    #[test]
    fn nbf_and_the_maximum_lifetime_are_enforced() {
        let auth = Auth::new(SECRET).unwrap();
        let user = Uuid::from_u128(7);
        let now = Utc::now();
        let sign = |claims: serde_json::Value| auth.sign(&claims).unwrap();
        let base = |exp: DateTime<Utc>| serde_json::json!({"sub": user, "role": USER_ROLE, "exp": exp.timestamp()});

        // nbf: in the future refused, within the leeway or past accepted.
        let mut later = base(now + Duration::hours(1));
        later["nbf"] = (now + Duration::minutes(10)).timestamp().into();
        let e = auth.verify(&sign(later)).unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::UNAUTHORIZED);
        assert!(e.message.contains("not valid yet"), "{}", e.message);
        let mut skewed = base(now + Duration::hours(1));
        skewed["nbf"] = (now + Duration::seconds(2)).timestamp().into();
        assert!(auth.verify(&sign(skewed)).is_ok());
        let mut past = base(now + Duration::hours(1));
        past["nbf"] = (now - Duration::hours(1)).timestamp().into();
        assert!(auth.verify(&sign(past)).is_ok());

        // The maximum lifetime: exp − iat, and exp − now without iat.
        let year_3000 = DateTime::parse_from_rfc3339("3000-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let e = auth.verify(&sign(base(year_3000))).unwrap_err();
        assert!(e.message.contains("lives too long"), "{}", e.message);
        assert!(e.message.contains("from now to `exp`"), "{}", e.message);
        // Dated a day before its expiry in 3000: still refused (exp − now).
        let mut dated = base(year_3000);
        dated["iat"] = (year_3000 - Duration::days(1)).timestamp().into();
        let e = auth.verify_at(&sign(dated.clone()), now).unwrap_err();
        assert!(e.message.contains("issued in the future"), "{}", e.message);
        let mut long = base(now + Duration::days(20));
        long["iat"] = (now - Duration::days(11)).timestamp().into();
        let e = auth.verify(&sign(long)).unwrap_err();
        assert!(e.message.contains("from `iat` to `exp`"), "{}", e.message);
        assert!(
            e.message.contains("above the maximum of 30d"),
            "{}",
            e.message
        );
        assert!(auth.verify(&sign(base(now + Duration::days(29)))).is_ok());
        assert!(
            auth.verify(
                &auth
                    .mint(user, Duration::days(DEFAULT_MAX_LIFETIME_DAYS), now)
                    .unwrap()
            )
            .is_ok()
        );

        // A shorter maximum; minting above it is refused up front.
        let short = auth.clone().with_max_lifetime(Duration::hours(2)).unwrap();
        assert!(short.verify(&sign(base(now + Duration::hours(3)))).is_err());
        assert!(short.verify(&sign(base(now + Duration::hours(1)))).is_ok());
        let e = short.mint(user, Duration::hours(3), now).unwrap_err();
        assert!(matches!(e, AuthError::TtlAboveMax { .. }));
        assert!(e.to_string().contains("above the maximum of 2h 0m"), "{e}");
        assert!(matches!(
            auth.clone().with_max_lifetime(Duration::zero()),
            Err(AuthError::BadTtl(_))
        ));
    }
}
