use std::sync::LazyLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

use crate::Skill;
use crate::validate::Problem;

/// The JSON Schema (draft 2020-12) of a skill document, for editors and for the structural
/// validation pass.
#[must_use]
pub fn skill_json_schema() -> Value {
    let schema = schemars::schema_for!(Skill);
    schema.to_value()
}

static VALIDATOR: LazyLock<Result<jsonschema::Validator, String>> =
    LazyLock::new(|| jsonschema::validator_for(&skill_json_schema()).map_err(|e| e.to_string()));

/// Checks `instance` against the exported schema and returns every violation as a problem with
/// a dotted path. Structure only (types, required fields, enums, ranges, lengths, patterns);
/// rules across fields live in `validate`.
pub(crate) fn structural_problems(instance: &Value) -> Vec<Problem> {
    let validator = match &*VALIDATOR {
        Ok(v) => v,
        // Unreachable unless the derive output changes shape; reported, never a panic.
        Err(e) => {
            return vec![Problem::new(
                "(schema)",
                format!("internal schema error: {e}"),
            )];
        }
    };
    let mut out = Vec::new();
    for error in validator.iter_errors(instance) {
        push_problems(
            &mut out,
            instance,
            error.instance_path().as_str(),
            error.kind(),
            error.instance(),
        );
    }
    out
}

fn push_problems(
    out: &mut Vec<Problem>,
    root: &Value,
    pointer: &str,
    kind: &ValidationErrorKind,
    value: &Value,
) {
    let path = pointer_to_path(pointer, root);
    let got = describe(value);
    let message = match kind {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            out.push(Problem::new(join(&path, name), "is required"));
            return;
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for name in unexpected {
                let message = if name == "url" && is_mcp_server(&path) {
                    "MCP over HTTP is not supported; give `command` for a stdio server"
                } else {
                    "unknown field"
                };
                out.push(Problem::new(join(&path, name), message));
            }
            return;
        }
        ValidationErrorKind::AnyOf { context } => {
            // Option<T> and similar: report the branch that came closest (fewest errors,
            // ignoring the "null" branch), so the author sees the real rule.
            if let Some(best) = context
                .iter()
                .filter(|branch| !branch.is_empty())
                .filter(|branch| {
                    !branch.iter().all(|e| {
                        matches!(e.kind(), ValidationErrorKind::Type { kind: TypeKind::Single(t) }
                            if t.to_string() == "null")
                    })
                })
                .min_by_key(|branch| branch.len())
            {
                for e in best {
                    push_problems(
                        out,
                        root,
                        e.instance_path().as_str(),
                        e.kind(),
                        e.instance(),
                    );
                }
                return;
            }
            format!("is not valid here (got {got})")
        }
        ValidationErrorKind::OneOfNotValid { context } => {
            // Enums whose variants carry docs are exported as oneOf of `const`s.
            let consts: Option<Vec<Vec<String>>> = context
                .iter()
                .flatten()
                .map(|e| match e.kind() {
                    ValidationErrorKind::Constant { expected_value } => {
                        Some(vec![describe(expected_value)])
                    }
                    ValidationErrorKind::Enum { options } => {
                        Some(options.as_array()?.iter().map(describe).collect())
                    }
                    _ => None,
                })
                .collect();
            match consts.map(|c| c.concat()) {
                Some(list) if !list.is_empty() => {
                    format!("must be one of {} (got {got})", list.join(", "))
                }
                _ => format!("is not valid here (got {got})"),
            }
        }
        ValidationErrorKind::Type { kind } => format!("must be {} (got {got})", type_name(kind)),
        ValidationErrorKind::Enum { options } => {
            let list = options
                .as_array()
                .map(|a| a.iter().map(describe).collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            let floor = if path.ends_with("barsInterval") {
                "; 5m is the floor"
            } else {
                ""
            };
            format!("must be one of {list} (got {got}){floor}")
        }
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit} (got {got})"),
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit} (got {got})"),
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("must be greater than {limit} (got {got})")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("must be less than {limit} (got {got})")
        }
        ValidationErrorKind::MinLength { limit } if *limit == 1 => "must not be empty".to_owned(),
        ValidationErrorKind::MinLength { limit } => {
            format!(
                "must be at least {limit} characters (got {})",
                char_len(value)
            )
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!(
                "must be at most {limit} characters (got {})",
                char_len(value)
            )
        }
        ValidationErrorKind::MinItems { limit } if *limit == 1 => {
            "must have at least one entry".to_owned()
        }
        ValidationErrorKind::MinItems { limit } => {
            format!(
                "must have at least {limit} entries (got {})",
                item_len(value)
            )
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!(
                "must have at most {limit} entries (got {})",
                item_len(value)
            )
        }
        ValidationErrorKind::Pattern { pattern } => pattern_message(&path, pattern, &got),
        ValidationErrorKind::UniqueItems => "must not contain duplicates".to_owned(),
        other => format!("is not valid: {} (got {got})", other.keyword()),
    };
    out.push(Problem::new(path, message));
}

/// `tools.mcpServers[i]`: an MCP server entry.
fn is_mcp_server(path: &str) -> bool {
    path.strip_prefix("tools.mcpServers[")
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|i| i.bytes().all(|b| b.is_ascii_digit()))
}

fn pattern_message(path: &str, pattern: &str, got: &str) -> String {
    if path.contains("symbols") {
        format!("must be an upper-case symbol such as BTC, ETH or EURUSD (got {got})")
    } else if path.ends_with("model") {
        format!("must be provider/model, e.g. anthropic/claude-sonnet-4.6 (got {got})")
    } else {
        format!("must match {pattern} (got {got})")
    }
}

fn type_name(kind: &TypeKind) -> String {
    let name = |t: String| match t.as_str() {
        "object" => "an object".to_owned(),
        "array" => "a list".to_owned(),
        "integer" => "a whole number".to_owned(),
        "number" => "a number".to_owned(),
        "string" => "a string".to_owned(),
        "boolean" => "true or false".to_owned(),
        other => other.to_owned(),
    };
    match kind {
        TypeKind::Single(t) => name(t.to_string()),
        TypeKind::Multiple(set) => set
            .iter()
            .map(|t| name(t.to_string()))
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

fn char_len(v: &Value) -> usize {
    v.as_str().map_or(0, |s| s.chars().count())
}

fn item_len(v: &Value) -> usize {
    v.as_array().map_or(0, Vec::len)
}

/// A short, single-line rendering of a value for messages.
fn describe(v: &Value) -> String {
    const MAX: usize = 60;
    let s = match v {
        Value::String(s) if s.chars().count() > MAX => {
            format!("\"{}…\"", s.chars().take(MAX).collect::<String>())
        }
        Value::Array(a) => format!("a list of {}", a.len()),
        Value::Object(_) => "an object".to_owned(),
        other => other.to_string(),
    };
    s.replace('\n', " ")
}

fn join(path: &str, name: &str) -> String {
    if path == "(root)" {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// `/context/symbols/0` → `context.symbols[0]`, using the instance to tell indices from keys.
fn pointer_to_path(pointer: &str, root: &Value) -> String {
    if pointer.is_empty() {
        return "(root)".to_owned();
    }
    let mut out = String::new();
    let mut node = Some(root);
    for raw in pointer.trim_start_matches('/').split('/') {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        match node {
            Some(Value::Array(items)) => {
                out.push_str(&format!("[{seg}]"));
                node = seg.parse::<usize>().ok().and_then(|i| items.get(i));
            }
            other => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&seg);
                node = other.and_then(|v| v.get(&seg));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_schema_compiles() {
        assert!(VALIDATOR.is_ok(), "{:?}", VALIDATOR.as_ref().err());
        let schema = skill_json_schema();
        assert_eq!(schema["title"], "Skill");
    }

    #[test]
    fn pointers_become_dotted_paths() {
        let v = serde_json::json!({"context": {"symbols": ["BTC", "x"]}});
        assert_eq!(
            pointer_to_path("/context/symbols/1", &v),
            "context.symbols[1]"
        );
        assert_eq!(pointer_to_path("", &v), "(root)");
    }
}
