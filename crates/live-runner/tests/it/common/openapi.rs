//! Conformance of the API's answers to its OpenAPI document. Every test server
//! ([`super::serve::Server`]) answers through [`layer`], which checks each answer under `/api`
//! against the document the server generates ([`live_runner::serve::openapi::document`]): the
//! route (path template and method) must be documented, the status listed for it, the content
//! type listed for that status, and a JSON body valid under that status's schema (formats
//! included: `uuid`, `date-time`). A chat stream's events are checked one by one against the
//! schemas its description names. What breaks the document is recorded, named by route, and
//! fails the test when its server is dropped ([`Conformance::assert_clean`]). Not routes, and
//! not checked: axum's 405 for a method a documented path does not take, the server's JSON 404
//! for a path it has no route for, and HEAD and OPTIONS answers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use futures_util::StreamExt;
use live_runner::serve::openapi;
use serde_json::Value;

/// Most bytes of one answer the layer reads (the API's largest answers are far smaller).
const MAX_BODY: usize = 16 * 1024 * 1024;

/// The schema of each chat stream event's data, by event name (as the document's description
/// of `POST /api/chat` names them); `done` carries `[DONE]`.
const EVENT_SCHEMAS: [(&str, &str); 4] = [
    ("step", "StepEvent"),
    ("toolResult", "ToolResultEvent"),
    ("answer", "ChatResponse"),
    ("error", "ErrorBody"),
];

/// One documented operation and status, as an answer hit it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Hit {
    /// The path template (`/api/facts/{id}`).
    pub path: String,
    /// Lower-case method (`post`).
    pub method: String,
    /// The status.
    pub status: u16,
}

/// What a server's answers did to the document.
#[derive(Default)]
pub(crate) struct Conformance {
    /// Every violation, named by route.
    violations: Mutex<Vec<String>>,
    /// Every documented (route, status) an answer hit.
    hits: Mutex<BTreeSet<Hit>>,
    /// Compiled schemas, by JSON pointer into the document.
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

/// The document as the server serves it.
pub(crate) fn document() -> &'static Value {
    openapi::document()
}

/// The path template of the document matching `path`, preferring literal segments.
pub(crate) fn template_of(doc: &Value, path: &str) -> Option<String> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let mut best: Option<(usize, String)> = None;
    for template in doc["paths"].as_object()?.keys() {
        let parts: Vec<&str> = template.split('/').collect();
        if parts.len() != segments.len() {
            continue;
        }
        let mut literal = 0;
        let matched = parts.iter().zip(&segments).all(|(t, s)| {
            if t.starts_with('{') && t.ends_with('}') {
                !s.is_empty()
            } else {
                literal += 1;
                t == s
            }
        });
        if matched && best.as_ref().is_none_or(|(n, _)| literal > *n) {
            best = Some((literal, template.clone()));
        }
    }
    best.map(|(_, t)| t)
}

/// `~` and `/` escaped for a JSON pointer.
fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// The media type of `headers`' `Content-Type`, lower-case, without parameters.
fn media_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
}

impl Conformance {
    fn violation(&self, what: String) {
        self.violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(what);
    }

    /// The violations so far.
    pub(crate) fn violations(&self) -> Vec<String> {
        self.violations
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every documented (route, status) answered so far.
    pub(crate) fn hits(&self) -> BTreeSet<Hit> {
        self.hits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Panics naming every violation, if there is one.
    pub(crate) fn assert_clean(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "answers that break the OpenAPI document:\n{}",
            violations.join("\n")
        );
    }

    /// The validator of the schema at `pointer` (with the document's components beside it, so
    /// its `$ref`s resolve).
    fn validator(&self, doc: &Value, pointer: &str) -> Result<Arc<jsonschema::Validator>, String> {
        let mut cache = self
            .validators
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(v) = cache.get(pointer) {
            return Ok(v.clone());
        }
        let schema = doc
            .pointer(pointer)
            .ok_or_else(|| format!("no schema at {pointer}"))?;
        let mut root = match schema {
            Value::Object(map) => map.clone(),
            Value::Bool(true) => serde_json::Map::new(),
            other => return Err(format!("the schema at {pointer} is {other}")),
        };
        root.insert("components".into(), doc["components"].clone());
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&Value::Object(root))
            .map_err(|e| format!("the schema at {pointer} does not compile: {e}"))?;
        let validator = Arc::new(validator);
        cache.insert(pointer.to_owned(), validator.clone());
        Ok(validator)
    }

    /// The problems of `value` under the schema at `pointer`.
    fn problems(&self, doc: &Value, pointer: &str, value: &Value) -> Vec<String> {
        match self.validator(doc, pointer) {
            Ok(v) => v
                .iter_errors(value)
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect(),
            Err(e) => vec![e],
        }
    }

    /// Checks one answer; `body` is `None` for a stream still to be read (its events are
    /// checked by [`Conformance::check_events`]).
    fn check(
        &self,
        method: &Method,
        path: &str,
        status: StatusCode,
        media: Option<&str>,
        body: Option<&[u8]>,
    ) {
        let doc = document();
        let route = format!("{method} {path}");
        let Some(template) = template_of(doc, path) else {
            // The server's JSON 404 for a path it has no route for is not a route.
            let fallback = status == StatusCode::NOT_FOUND
                && body
                    .and_then(|b| serde_json::from_slice::<Value>(b).ok())
                    .is_some_and(|v| v["error"] == "no such route");
            if !fallback {
                self.violation(format!(
                    "{route} answered {status}, and the document has no such route"
                ));
            }
            return;
        };
        let op = method.as_str().to_ascii_lowercase();
        let op_pointer = format!("/paths/{}/{op}", escape(&template));
        if doc.pointer(&op_pointer).is_none() {
            // axum's answer to a method the route does not take.
            if status != StatusCode::METHOD_NOT_ALLOWED {
                self.violation(format!(
                    "{route} ({template}) answered {status}, and the document has no {op} \
                     operation there"
                ));
            }
            return;
        }
        let code = status.as_u16();
        let response_pointer = format!("{op_pointer}/responses/{code}");
        if doc.pointer(&response_pointer).is_none() {
            self.violation(format!(
                "{route} ({op} {template}) answered {code}, which the document does not list"
            ));
            return;
        }
        self.hits
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(Hit {
                path: template.clone(),
                method: op.clone(),
                status: code,
            });
        let Some(media) = media else {
            if body.is_some_and(|b| !b.is_empty()) {
                self.violation(format!(
                    "{route} answered {code} with a body and no content type"
                ));
            }
            return;
        };
        let content = format!("{response_pointer}/content/{}", escape(media));
        if doc.pointer(&content).is_none() {
            self.violation(format!(
                "{route} ({op} {template}) answered {code} as {media}, which the document does \
                 not list for that status"
            ));
            return;
        }
        let Some(body) = body else { return };
        if media != "application/json" {
            return;
        }
        let value: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                self.violation(format!(
                    "{route} answered {code} with a body that is not JSON: {e}"
                ));
                return;
            }
        };
        let problems = self.problems(doc, &format!("{content}/schema"), &value);
        if !problems.is_empty() {
            self.violation(format!(
                "{route} ({op} {template}) answered {code} with a body its schema refuses: {}\n  \
                 body: {value}",
                problems.join("; ")
            ));
        }
    }

    /// Checks a JSON answer of `method` `path` with `status`, as the layer does.
    pub(crate) fn check_json(&self, method: &str, path: &str, status: u16, body: &str) {
        let method = Method::from_bytes(method.as_bytes()).expect("method");
        let status = StatusCode::from_u16(status).expect("status");
        self.check(
            &method,
            path,
            status,
            Some("application/json"),
            Some(body.as_bytes()),
        );
    }

    /// Checks a finished server-sent event stream of `route`: each event a documented one, its
    /// data valid under its schema.
    fn check_events(&self, route: &str, text: &str) {
        let doc = document();
        for (name, data) in sse_events(text) {
            if name == "done" {
                if data != "[DONE]" {
                    self.violation(format!("{route}: event done with data {data:?}"));
                }
                continue;
            }
            let Some((_, schema)) = EVENT_SCHEMAS.iter().find(|(n, _)| *n == name) else {
                self.violation(format!(
                    "{route}: event {name:?} is not one the document names"
                ));
                continue;
            };
            let value = match serde_json::from_str::<Value>(&data) {
                Ok(v) => v,
                Err(e) => {
                    self.violation(format!("{route}: event {name} data is not JSON: {e}"));
                    continue;
                }
            };
            let problems = self.problems(doc, &format!("/components/schemas/{schema}"), &value);
            if !problems.is_empty() {
                self.violation(format!(
                    "{route}: event {name} refused by {schema}: {}\n  data: {data}",
                    problems.join("; ")
                ));
            }
        }
    }
}

/// `event:` / `data:` pairs of a server-sent event stream, in order (keep-alive comments, which
/// have neither, left out).
pub(crate) fn sse_events(text: &str) -> Vec<(String, String)> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .filter_map(|block| {
            let mut name = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
                }
            }
            name.map(|n| (n, data.join("\n")))
        })
        .collect()
}

/// The middleware: passes every answer on unchanged, checking those under `/api`.
pub(crate) async fn layer(
    State(conformance): State<Arc<Conformance>>,
    req: Request,
    next: Next,
) -> Response {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let response = next.run(req).await;
    if !path.starts_with("/api/") || matches!(method, Method::HEAD | Method::OPTIONS) {
        return response;
    }
    let status = response.status();
    let media = media_type(response.headers());
    let (parts, body) = response.into_parts();
    if media.as_deref() == Some("text/event-stream") {
        conformance.check(&method, &path, status, media.as_deref(), None);
        // Passed on as it comes; checked when it ends.
        let route = format!("{method} {path}");
        let stream = futures_util::stream::unfold(
            Some((body.into_data_stream(), Vec::new())),
            move |state| {
                let conformance = conformance.clone();
                let route = route.clone();
                async move {
                    let (mut data, mut seen) = state?;
                    match data.next().await {
                        Some(Ok(chunk)) => {
                            seen.extend_from_slice(&chunk);
                            Some((Ok(chunk), Some((data, seen))))
                        }
                        Some(Err(e)) => Some((Err(e), None)),
                        None => {
                            conformance.check_events(&route, &String::from_utf8_lossy(&seen));
                            None
                        }
                    }
                }
            },
        );
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            conformance.violation(format!(
                "{method} {path}: the answer could not be read: {e}"
            ));
            return Response::from_parts(parts, Body::empty());
        }
    };
    conformance.check(&method, &path, status, media.as_deref(), Some(&bytes));
    Response::from_parts(parts, Body::from(bytes))
}

/// Every operation of the document as (path template, method), with the statuses it lists.
pub(crate) fn operations(doc: &Value) -> BTreeMap<(String, String), BTreeSet<u16>> {
    let mut out = BTreeMap::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in item.as_object().into_iter().flatten() {
            let statuses = op["responses"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(s, _)| s.parse().ok())
                .collect();
            out.insert((path.clone(), method.clone()), statuses);
        }
    }
    out
}
