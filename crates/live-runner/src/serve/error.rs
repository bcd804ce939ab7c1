//! The server's one error shape: a status and `{"error": "...", "field": "..."?}` as JSON, for
//! every failure — a bad token, a bad body, an unknown id, a store failure — including axum's own
//! extractor rejections, which [`ApiJson`], [`ApiPath`] and [`ApiQuery`] map to it.

use axum::body::Bytes;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use validator::{Validate, ValidationErrors, ValidationErrorsKind};

use super::wire::ErrorBody;

/// An error answered as `status` with the JSON body `{"error": message, "field": field?}`
/// ([`ErrorBody`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, for a person.
    pub message: String,
    /// The request field at fault (bad bodies), when there is one.
    pub field: Option<String>,
}

impl ApiError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            field: None,
        }
    }

    /// 401: no token, a bad signature, an expired token, a token of another role.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, message)
    }

    /// 404: nothing the caller may see has this id (other users' rows included).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 403: the request is refused whoever sends it (a cross-origin state change).
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
    }

    /// 400: the request is malformed (not JSON, wrong content type, bad id in the path).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 422: well-formed JSON whose `field` breaks a rule.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message: message.into(),
            field: Some(field.into()),
        }
    }

    /// 500: something on the server failed; the detail is logged, not sent.
    pub fn internal(what: &str, detail: &dyn std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "{what}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{what} failed on the server"),
        )
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status.as_u16(), self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            error: &self.message,
            field: self.field.as_deref(),
        };
        (self.status, axum::Json(body)).into_response()
    }
}

impl From<db::DbError> for ApiError {
    /// Not found → 404 (under row-level security another user's row is not found either); a
    /// control the deployment's status does not allow, or a review decided already → 409; a
    /// per-user limit → 429;
    /// a broken bound or rule → 422; a write the database's constraints refuse → 409 (a
    /// duplicate) or 422 (a row it refers to does not exist — e.g. a token whose user has no
    /// account in this database — or a check); anything else → 500 (logged, not sent).
    fn from(e: db::DbError) -> Self {
        use db::ConstraintKind;
        match e {
            db::DbError::NotFound { .. } => Self::not_found(e.to_string()),
            // The deployment's status does not allow the control: the request conflicts with
            // the state the resource is in.
            db::DbError::Transition { .. } => Self::new(StatusCode::CONFLICT, e.to_string()),
            // Decided already (a held lesson reviewed before), or its state no longer allows it.
            db::DbError::Conflict { .. } => Self::new(StatusCode::CONFLICT, e.to_string()),
            // A per-user limit (backtest jobs): the caller must wait for some to finish.
            db::DbError::Limit { .. } => Self::new(StatusCode::TOO_MANY_REQUESTS, e.to_string()),
            db::DbError::Bound { field, .. } => Self::invalid(field, e.to_string()),
            db::DbError::Invalid { what, .. } => Self::invalid(what, e.to_string()),
            db::DbError::Constraint {
                kind: ConstraintKind::Unique,
                ..
            } => Self::new(StatusCode::CONFLICT, e.to_string()),
            db::DbError::Constraint {
                kind: ConstraintKind::ForeignKey,
                ..
            } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!(
                    "{e} (a row it refers to does not exist: is the token's user known to this \
                     database?)"
                ),
            ),
            db::DbError::Constraint { .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, e.to_string())
            }
            other => Self::internal("a database request", &other),
        }
    }
}

impl From<chat::ChatError> for ApiError {
    fn from(e: chat::ChatError) -> Self {
        match e {
            chat::ChatError::Store(e) => e.into(),
            other => Self::internal("the chat turn", &other),
        }
    }
}

/// The first problem of a `validator` report as a 422 naming its field (`messages[2].content`
/// for a nested one).
#[must_use]
pub fn validation_error(errors: &ValidationErrors) -> ApiError {
    fn first(errors: &ValidationErrors, prefix: &str) -> Option<(String, String)> {
        let mut fields: Vec<_> = errors.errors().iter().collect();
        fields.sort_by(|a, b| a.0.cmp(b.0));
        for (field, kind) in fields {
            let path = if prefix.is_empty() {
                field.to_string()
            } else {
                format!("{prefix}.{field}")
            };
            match kind {
                ValidationErrorsKind::Field(list) => {
                    if let Some(e) = list.first() {
                        let message = e
                            .message
                            .as_ref()
                            .map_or_else(|| e.code.to_string(), ToString::to_string);
                        return Some((path, message));
                    }
                }
                ValidationErrorsKind::Struct(inner) => {
                    if let Some(found) = first(inner, &path) {
                        return Some(found);
                    }
                }
                ValidationErrorsKind::List(items) => {
                    for (i, inner) in items {
                        if let Some(found) = first(inner, &format!("{path}[{i}]")) {
                            return Some(found);
                        }
                    }
                }
            }
        }
        None
    }
    match first(errors, "") {
        Some((field, message)) => ApiError::invalid(field.clone(), format!("{field}: {message}")),
        None => ApiError::invalid("body", "the request body is invalid"),
    }
}

/// A JSON body, deserialised and then validated (`validator`): a body that is not JSON or
/// not of the expected shape is 400/422 naming what serde found (e.g. `missing field
/// \`fact\``), one with a control character in any string is 422 naming its field
/// ([`super::input::check_json`]), one that breaks a rule is 422 naming the field. Never axum's
/// plain-text rejection.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned + Validate,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(req.headers()) {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Expected request with `Content-Type: application/json`: send Content-Type: \
                 application/json",
            ));
        }
        // The body's bytes (within the router's body limit), read once: parsed into `T` with
        // serde's field paths, and walked for control characters.
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|r| ApiError::new(r.status(), r.body_text()))?;
        let axum::Json(value) = axum::Json::<T>::from_bytes(&bytes).map_err(json_rejection)?;
        let raw: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::bad_request(format!("the body is not JSON: {e}")))?;
        super::input::check_json(&raw)?;
        value.validate().map_err(|e| validation_error(&e))?;
        Ok(ApiJson(value))
    }
}

/// Whether the request says its body is JSON (`application/json`, or `application/…+json`), as
/// axum's `Json` decides it.
fn json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    kind == "application" && (subtype == "json" || subtype.ends_with("+json"))
}

/// Largest optional body read by [`OptionalJson`], in bytes.
const MAX_OPTIONAL_BODY: usize = 64 * 1024;

/// [`ApiJson`] for a body that may be left out: an empty (or blank) body is `T::default()`;
/// any other is read, checked and refused as [`ApiJson`]'s.
#[derive(Debug, Clone)]
pub struct OptionalJson<T>(pub T);

impl<S, T> FromRequest<S> for OptionalJson<T>
where
    T: DeserializeOwned + Validate + Default,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::to_bytes(body, MAX_OPTIONAL_BODY)
            .await
            .map_err(|e| {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body could not be read (at most {MAX_OPTIONAL_BODY} bytes): {e}"),
                )
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        let req = Request::from_parts(parts, axum::body::Body::from(bytes));
        let ApiJson(value) = ApiJson::<T>::from_request(req, state).await?;
        Ok(OptionalJson(value))
    }
}

fn json_rejection(r: JsonRejection) -> ApiError {
    match r {
        // Valid JSON of the wrong shape: serde names the field (`fact: invalid type ...`).
        JsonRejection::JsonDataError(e) => {
            let text = e.body_text();
            let field = field_of_serde_error(&text).unwrap_or_else(|| "body".to_owned());
            ApiError::invalid(field, text)
        }
        JsonRejection::JsonSyntaxError(e) => ApiError::bad_request(e.body_text()),
        JsonRejection::MissingJsonContentType(e) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("{}: send Content-Type: application/json", e.body_text()),
        ),
        // Too large a body (413), a body that cannot be read: the rejection's own status.
        other => ApiError::new(other.status(), other.body_text()),
    }
}

/// The field serde's message names: `missing field `fact``, or the path before `: ` in
/// axum's "Failed to deserialize the JSON body into the target type: fact: ...".
fn field_of_serde_error(text: &str) -> Option<String> {
    if let Some(rest) = text.split("missing field `").nth(1) {
        return rest.split('`').next().map(str::to_owned);
    }
    if let Some(rest) = text.split("unknown field `").nth(1) {
        return rest.split('`').next().map(str::to_owned);
    }
    let rest = text.split("target type: ").nth(1)?;
    let (path, _) = rest.split_once(": ")?;
    (!path.contains(' ')).then(|| path.to_owned())
}

/// A path parameter (an id): a malformed one is 400 naming the parameter, as JSON (axum's
/// status, the JSON shape).
#[derive(Debug, Clone)]
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|r: PathRejection| ApiError::new(r.status(), r.body_text()))
    }
}

/// Query parameters: a bad one is 400 naming it, as JSON.
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|r: QueryRejection| ApiError::new(r.status(), r.body_text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_name_their_field() {
        assert_eq!(
            field_of_serde_error(
                "Failed to deserialize the JSON body into the target type: missing field `fact` at line 1 column 2"
            ),
            Some("fact".to_owned())
        );
        assert_eq!(
            field_of_serde_error(
                "Failed to deserialize the JSON body into the target type: confidence: unknown variant `sure`, expected `asserted` or `inferred` at line 1 column 30"
            ),
            Some("confidence".to_owned())
        );
        assert_eq!(field_of_serde_error("EOF while parsing"), None);
    }
}
