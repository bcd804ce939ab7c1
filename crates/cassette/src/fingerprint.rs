//! The canonical form of a model request and its fingerprint.
//!
//! The canonical request is a JSON object of everything that is sent and can change the
//! answer: the provider and model, the system prompt, every message (tool calls and results
//! included), every tool's name, description and JSON Schema, and the sampling parameters (the
//! runtime sets only `max_output_tokens`). The tick's deadline is not part of it (it is not
//! sent). It is written with object keys sorted and no whitespace, so equal requests have one
//! spelling; the fingerprint is the SHA3-256 of that text, in lowercase hex.

use model::ModelRequest;
use serde_json::{Value, json};
use sha3::{Digest, Sha3_256};

/// The version of the canonical form, part of every canonical request: a change to what is
/// fingerprinted changes it, so old recordings miss instead of answering the wrong request.
pub const CANONICAL_VERSION: u32 = 1;

/// The canonical JSON of `request` sent to the model `model_id` (`provider/model`).
#[must_use]
pub fn canonical_request(model_id: &str, request: &ModelRequest) -> Value {
    let provider = model_id.split_once('/').map_or("", |(p, _)| p);
    json!({
        "v": CANONICAL_VERSION,
        "provider": provider,
        "model": model_id,
        "system": request.system,
        "messages": request.messages,
        "tools": request.tools.iter().map(|t| json!({
            "name": t.name,
            "description": t.description,
            "parameters": *t.parameters,
        })).collect::<Vec<_>>(),
        "sampling": { "max_output_tokens": request.max_output_tokens },
    })
}

/// `value` as JSON text with every object's keys sorted and no whitespace.
#[must_use]
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The SHA3-256 of `canonical` (a [`canonical_json`] text), 64 lowercase hex digits.
#[must_use]
pub fn fingerprint(canonical: &str) -> String {
    hex::encode(Sha3_256::digest(canonical.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::{Message, ToolDefinition};
    use std::sync::Arc;

    fn request() -> ModelRequest {
        ModelRequest {
            model: "gpt-4o-mini".into(),
            system: "You trade.".into(),
            messages: vec![Message::User {
                content: "## Time\n2017-04-19T10:00:00Z".into(),
            }],
            tools: vec![ToolDefinition {
                name: "propose_order".into(),
                description: "Propose.".into(),
                parameters: Arc::new(json!({"type": "object", "required": ["b", "a"]})),
            }],
            max_output_tokens: 512,
            deadline: None,
        }
    }

    #[test]
    fn keys_are_sorted_and_arrays_keep_their_order() {
        let v = json!({"b": 1, "a": {"d": [3, 1], "c": "x\"y"}});
        assert_eq!(canonical_json(&v), r#"{"a":{"c":"x\"y","d":[3,1]},"b":1}"#);
    }

    #[test]
    fn every_sent_part_changes_the_fingerprint_and_the_deadline_does_not() {
        let fp = |r: &ModelRequest| {
            fingerprint(&canonical_json(&canonical_request("openai/gpt-4o-mini", r)))
        };
        let base = fp(&request());
        assert_eq!(base.len(), 64);
        assert_eq!(base, fp(&request()), "stable");
        let mut r = request();
        r.deadline = Some(std::time::Instant::now());
        assert_eq!(base, fp(&r), "the deadline is not sent");

        let mut r = request();
        r.system.push('!');
        assert_ne!(base, fp(&r));
        let mut r = request();
        r.max_output_tokens = 513;
        assert_ne!(base, fp(&r));
        let mut r = request();
        r.tools[0].parameters = Arc::new(json!({"type": "object"}));
        assert_ne!(base, fp(&r));
        let mut r = request();
        r.messages.push(Message::User {
            content: "more".into(),
        });
        assert_ne!(base, fp(&r));
        assert_ne!(
            base,
            fingerprint(&canonical_json(&canonical_request(
                "openrouter/gpt-4o-mini",
                &request()
            )))
        );
    }
}
