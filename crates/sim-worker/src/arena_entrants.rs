//! Who competes in an arena: entrants from the command line (`--entrant`) and from an arena
//! file (`--arena`), and each one's skill with its settings applied.
//!
//! # The arena file
//! JSON, YAML or TOML (by extension), at most 1 MiB; unknown keys are errors:
//!
//! ```yaml
//! reference: sma-5-20            # optional; --reference overrides it
//! entrants:
//!   - name: gpt                  # 1–40 of A–Z a–z 0–9 . _ -, starting with a letter or digit
//!     model: openai/gpt-4o-mini  # optional: --model, else the skill's own
//!   - name: gpt-cautious
//!     model: openai/gpt-4o-mini
//!     set:                       # optional: fields of the skill, by dotted path
//!       risk.maxPositionPct: 30
//!       strategy.leash: balanced
//!   - name: sma-5-20
//!     skill: other-skill.yaml    # optional: relative to the arena file; else --skill
//!     model: builtin/sma-cross:5:20
//! ```
//!
//! A `set` path names a field as the skill file spells it (`camelCase` keys joined by `.`, a
//! number for a list item: `strategy.entry.0`); its value replaces the field's (in TOML, quote
//! the path: `"risk.maxPositionPct" = 30`). The skill with its settings is validated as a skill
//! file is, every problem named.
//!
//! # On the command line
//! `--entrant NAME` runs `--skill` with `--model` (or the skill's own model);
//! `--entrant 'NAME:KEY=VALUE;KEY=VALUE'` sets `skill=FILE`, `model=MODEL` or any skill field
//! by its dotted path, the value read as YAML (`30` a number, `balanced` a string, `[a, b]` a
//! list). Entrants from a file come first, then those of the command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::Failure;

/// The largest arena file read.
const MAX_ARENA_FILE_BYTES: u64 = 1 << 20;

/// The most characters in an entrant's name.
const MAX_NAME_CHARS: usize = 40;

/// An entrant as given.
#[derive(Debug, Clone)]
pub(crate) struct EntrantSpec {
    pub name: String,
    /// Its skill file; `None` for `--skill`.
    pub skill: Option<PathBuf>,
    /// Its model; `None` for `--model`, else the skill's own.
    pub model: Option<String>,
    /// Skill fields to set, by dotted path (applied shortest path first).
    pub set: BTreeMap<String, Value>,
    /// Where it was given, for errors: `--entrant 2` or `arena.yaml: entrants[1]`.
    pub origin: String,
}

/// An arena file's content.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArenaFile {
    #[serde(default)]
    reference: Option<String>,
    entrants: Vec<FileEntrant>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEntrant {
    name: String,
    #[serde(default)]
    skill: Option<PathBuf>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    set: BTreeMap<String, Value>,
}

fn bad(message: impl Into<String>) -> Failure {
    Failure::bad_input(format!("error: {}", message.into()))
}

/// Checks an entrant's name: 1–40 of `A–Z a–z 0–9 . _ -`, starting with a letter or digit.
fn check_name(name: &str, origin: &str) -> Result<(), Failure> {
    let ok = !name.is_empty()
        && name.chars().count() <= MAX_NAME_CHARS
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(bad(format!(
            "{origin}: entrant name {name:?} must be 1 to {MAX_NAME_CHARS} of the characters \
             A-Z a-z 0-9 . _ - and start with a letter or a digit (it names the entrant's \
             folder and --reference)"
        )))
    }
}

/// Reads an arena file: its entrants (skill paths made relative to the file's folder) and its
/// reference.
pub(crate) fn read_file(path: &Path) -> Result<(Vec<EntrantSpec>, Option<String>), Failure> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("--arena {shown}: {e}")))?;
    if meta.len() > MAX_ARENA_FILE_BYTES {
        return Err(bad(format!(
            "--arena {shown}: {} bytes; an arena file may have at most {MAX_ARENA_FILE_BYTES}",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("--arena {shown}: {e}")))?;
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let document: Value = match ext.as_deref() {
        Some("json") => serde_json::from_str(&text).map_err(|e| e.to_string()),
        Some("yaml" | "yml") => serde_yaml_ng::from_str(&text).map_err(|e| e.to_string()),
        Some("toml") => toml::from_str(&text).map_err(|e| e.to_string()),
        _ => {
            return Err(bad(format!(
                "--arena {shown}: unknown file type; use .json, .yaml, .yml or .toml"
            )));
        }
    }
    .map_err(|e| bad(format!("--arena {shown}: not valid: {}", e.trim_end())))?;
    let file: ArenaFile = serde_path_to_error::deserialize(document).map_err(|e| {
        let at = e.path().to_string();
        let at = if at == "." { "(root)".to_owned() } else { at };
        bad(format!("--arena {shown}: {at}: {}", e.into_inner()))
    })?;
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut out = Vec::with_capacity(file.entrants.len());
    for (i, e) in file.entrants.into_iter().enumerate() {
        let origin = format!("{shown}: entrants[{i}]");
        check_name(&e.name, &origin)?;
        out.push(EntrantSpec {
            name: e.name,
            skill: e
                .skill
                .map(|s| if s.is_absolute() { s } else { dir.join(s) }),
            model: e.model,
            set: e.set,
            origin,
        });
    }
    Ok((out, file.reference))
}

/// Parses `--entrant NAME[:KEY=VALUE;…]`, the `n`th (1-based) on the command line.
pub(crate) fn parse_flag(spec: &str, n: usize) -> Result<EntrantSpec, Failure> {
    let origin = format!("--entrant {spec:?} (the entrant flag number {n})");
    let (name, settings) = spec.split_once(':').unwrap_or((spec, ""));
    let name = name.trim();
    check_name(name, &origin)?;
    let mut out = EntrantSpec {
        name: name.to_owned(),
        skill: None,
        model: None,
        set: BTreeMap::new(),
        origin: format!("--entrant {name}"),
    };
    for setting in settings.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((key, value)) = setting.split_once('=') else {
            return Err(bad(format!(
                "{origin}: {setting:?} is not KEY=VALUE (settings are separated by `;`)"
            )));
        };
        let (key, value) = (key.trim(), value.trim());
        let twice = || bad(format!("{origin}: {key} given twice"));
        match key {
            "skill" => {
                if out.skill.replace(PathBuf::from(value)).is_some() {
                    return Err(twice());
                }
            }
            "model" => {
                if out.model.replace(value.to_owned()).is_some() {
                    return Err(twice());
                }
            }
            path => {
                let parsed: Value = serde_yaml_ng::from_str(value)
                    .map_err(|e| bad(format!("{origin}: {path}={value}: not a YAML value: {e}")))?;
                if out.set.insert(path.to_owned(), parsed).is_some() {
                    return Err(twice());
                }
            }
        }
    }
    Ok(out)
}

/// Sets the field at the dotted `path` of a skill document to `value`; a missing key of an
/// object is added (the skill's validation refuses one it does not know).
pub(crate) fn set_path(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    let parts: Vec<&str> = path.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(format!("{path:?} is not a dotted path (an empty part)"));
    }
    let mut cur = doc;
    for (i, part) in parts.iter().enumerate() {
        let here = || parts[..i].join(".");
        let last = i + 1 == parts.len();
        cur = match cur {
            Value::Object(map) => {
                if last {
                    map.insert((*part).to_owned(), value);
                    return Ok(());
                }
                map.entry((*part).to_owned())
                    .or_insert_with(|| Value::Object(serde_json::Map::new()))
            }
            Value::Array(items) => {
                let len = items.len();
                let slot = part
                    .parse::<usize>()
                    .ok()
                    .and_then(|k| items.get_mut(k))
                    .ok_or_else(|| {
                        format!(
                            "{}: {part:?} is not an item of the list (it has {len}, numbered from 0)",
                            here()
                        )
                    })?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            other => {
                let kind = match other {
                    Value::Null => "null",
                    Value::Bool(_) => "a boolean",
                    Value::Number(_) => "a number",
                    _ => "a string",
                };
                return Err(format!("{} is {kind}, so it has no field {part:?}", here()));
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_flag_names_an_entrant_and_its_settings() {
        let e = parse_flag(
            "cautious: model=builtin/sma-cross:5:20; risk.maxPositionPct=30;strategy.leash = balanced",
            1,
        )
        .unwrap();
        assert_eq!(e.name, "cautious");
        assert_eq!(e.model.as_deref(), Some("builtin/sma-cross:5:20"));
        assert_eq!(e.set["risk.maxPositionPct"], json!(30));
        assert_eq!(e.set["strategy.leash"], json!("balanced"));
        assert_eq!(parse_flag("plain", 2).unwrap().set.len(), 0);
        for (spec, says) in [
            ("bad name:model=x", "entrant name \"bad name\""),
            ("a:model", "\"model\" is not KEY=VALUE"),
            ("a:model=x;model=y", "model given twice"),
            (":model=x", "entrant name \"\""),
        ] {
            let e = parse_flag(spec, 3).unwrap_err();
            assert!(e.message.contains(says), "{spec}: {}", e.message);
            assert!(e.message.contains("entrant flag number 3"), "{}", e.message);
        }
    }

    #[test]
    fn a_path_sets_a_field_and_says_where_it_cannot() {
        let mut doc = json!({"risk": {"maxPositionPct": 60}, "strategy": {"entry": ["a", "b"]}});
        set_path(&mut doc, "risk.maxPositionPct", json!(30)).unwrap();
        set_path(&mut doc, "strategy.entry.1", json!("c")).unwrap();
        set_path(&mut doc, "context.barsLookback", json!(40)).unwrap();
        assert_eq!(
            doc,
            json!({"risk": {"maxPositionPct": 30}, "strategy": {"entry": ["a", "c"]},
                   "context": {"barsLookback": 40}})
        );
        let e = set_path(&mut doc, "strategy.entry.5", json!("x")).unwrap_err();
        assert!(e.contains("strategy.entry: \"5\" is not an item"), "{e}");
        let e = set_path(&mut doc, "risk.maxPositionPct.x", json!(1)).unwrap_err();
        assert!(e.contains("risk.maxPositionPct is a number"), "{e}");
        assert!(set_path(&mut doc, "risk..x", json!(1)).is_err());
    }
}
