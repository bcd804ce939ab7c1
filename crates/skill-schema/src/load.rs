use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeSeed;
use serde_json::Value;

use crate::Skill;
use crate::schema::structural_problems;
use crate::strict::{MAX_SKILL_BYTES, MAX_SKILL_DEPTH, Strict, yaml_flow_too_deep};
use crate::validate::{Problem, ValidationReport, semantic};

/// The text formats a skill file may be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON (`.json`).
    Json,
    /// YAML (`.yaml`, `.yml`).
    Yaml,
    /// TOML (`.toml`).
    Toml,
}

impl Format {
    /// The format a file extension implies (`.json`, `.yaml`/`.yml`, `.toml`).
    #[must_use]
    pub fn from_path(path: &Path) -> Option<Self> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "json" => Some(Format::Json),
            "yaml" | "yml" => Some(Format::Yaml),
            "toml" => Some(Format::Toml),
            _ => None,
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Json => "JSON",
            Format::Yaml => "YAML",
            Format::Toml => "TOML",
        })
    }
}

/// Why a skill could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The skill file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file's extension is not one of `.json`, `.yaml`, `.yml`, `.toml`.
    #[error("{path}: unknown file type; use .json, .yaml, .yml or .toml")]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The text is not well-formed in its format, has a key twice in one mapping or nests too
    /// deep ([`MAX_SKILL_DEPTH`](crate::MAX_SKILL_DEPTH)).
    #[error("{}not valid {format}: {message}", in_file(path.as_deref()))]
    Syntax {
        /// The file, when the document came from one ([`load_skill`]).
        path: Option<PathBuf>,
        /// The format the text was parsed as.
        format: Format,
        /// The parser's message, with line and column where it gives them, or the path of a
        /// duplicate key.
        message: String,
    },
    /// The document is larger than [`MAX_SKILL_BYTES`](crate::MAX_SKILL_BYTES).
    #[error("{}the document is {bytes} bytes; a skill may have at most {max} bytes", in_file(path.as_deref()))]
    TooLarge {
        /// The file, when the document came from one ([`load_skill`]).
        path: Option<PathBuf>,
        /// Its size in bytes.
        bytes: u64,
        /// The most bytes allowed.
        max: usize,
    },
    /// The document parsed but breaks the schema or a cross-field rule.
    #[error("{} problem(s) in the skill:\n{report}", report.errors.len())]
    Invalid {
        /// Every error (at least one) and warning found, sorted by path.
        report: ValidationReport,
    },
}

/// `"{path}: "`, or nothing for a document that did not come from a file.
fn in_file(path: Option<&Path>) -> String {
    path.map(|p| format!("{}: ", p.display()))
        .unwrap_or_default()
}

/// A skill that passed validation, with the warnings it raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSkill {
    /// The validated skill, defaults filled in.
    pub skill: Skill,
    /// Problems that do not stop the skill from running (e.g. removed keys that are ignored).
    pub warnings: Vec<Problem>,
}

/// Reads and validates a skill file; the format comes from the extension.
///
/// # Errors
/// [`LoadError::Io`] when the file cannot be read, [`LoadError::UnknownFormat`] for an
/// unsupported extension, [`LoadError::Syntax`] when the text does not parse, and
/// [`LoadError::Invalid`] with every problem when the document breaks the schema's rules.
pub fn load_skill(path: &Path) -> Result<LoadedSkill, LoadError> {
    let format = Format::from_path(path).ok_or_else(|| LoadError::UnknownFormat {
        path: path.to_owned(),
    })?;
    let io = |source| LoadError::Io {
        path: path.to_owned(),
        source,
    };
    // Refused before reading: a huge file is never loaded into memory.
    let bytes = std::fs::metadata(path).map_err(io)?.len();
    if bytes > MAX_SKILL_BYTES as u64 {
        return Err(LoadError::TooLarge {
            path: Some(path.to_owned()),
            bytes,
            max: MAX_SKILL_BYTES,
        });
    }
    let text = std::fs::read_to_string(path).map_err(io)?;
    parse_skill(&text, format).map_err(|mut e| {
        if let LoadError::Syntax { path: file, .. } | LoadError::TooLarge { path: file, .. } =
            &mut e
        {
            file.get_or_insert_with(|| path.to_owned());
        }
        e
    })
}

/// Parses and validates a skill document.
///
/// Three passes, so every problem is reported at once: the text is parsed into a generic
/// document; the document is checked against the exported JSON Schema (types, required fields,
/// enums, ranges, lengths, patterns); then, when the structure is sound, the typed skill is
/// checked for rules across fields (mode requirements, caps that contradict each other, unknown
/// tools, higher timeframes not above the execution timeframe, ...).
///
/// # Errors
/// [`LoadError::Syntax`] or [`LoadError::Invalid`]; see [`load_skill`].
pub fn parse_skill(text: &str, format: Format) -> Result<LoadedSkill, LoadError> {
    let document = parse_document(text, format)?;
    let mut report = ValidationReport {
        errors: structural_problems(&document),
        warnings: Vec::new(),
    };
    let mut skill = None;
    if report.errors.is_empty() {
        match serde_path_to_error::deserialize::<_, Skill>(document) {
            Ok(parsed) => {
                semantic(&parsed, &mut report);
                skill = Some(parsed);
            }
            Err(e) => {
                let path = e.path().to_string();
                let path = if path == "." {
                    "(root)".to_owned()
                } else {
                    path
                };
                report
                    .errors
                    .push(Problem::new(path, e.into_inner().to_string()));
            }
        }
    }
    report.errors.sort();
    report.errors.dedup();
    report.warnings.sort();
    let skill = match skill {
        Some(skill) if report.errors.is_empty() => skill,
        _ => return Err(LoadError::Invalid { report }),
    };
    Ok(LoadedSkill {
        skill,
        warnings: report.warnings,
    })
}

/// The text as a generic document: at most [`MAX_SKILL_BYTES`], no key twice in one mapping, at
/// most [`MAX_SKILL_DEPTH`] levels deep ([`Strict`]).
fn parse_document(text: &str, format: Format) -> Result<Value, LoadError> {
    if text.len() > MAX_SKILL_BYTES {
        return Err(LoadError::TooLarge {
            path: None,
            bytes: text.len() as u64,
            max: MAX_SKILL_BYTES,
        });
    }
    let syntax = |message: String| LoadError::Syntax {
        path: None,
        format,
        message,
    };
    let root = || Strict {
        depth: 0,
        path: "(root)",
    };
    match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            let value = root()
                .deserialize(&mut de)
                .and_then(|v| de.end().map(|()| v));
            value.map_err(|e| syntax(e.to_string()))
        }
        Format::Yaml => {
            if let Some(line) = yaml_flow_too_deep(text, MAX_SKILL_DEPTH) {
                return Err(syntax(format!(
                    "line {line}: nested more than {MAX_SKILL_DEPTH} levels deep"
                )));
            }
            root()
                .deserialize(serde_yaml_ng::Deserializer::from_str(text))
                .map_err(|e| syntax(e.to_string()))
        }
        Format::Toml => {
            let doc: toml::Table = toml::from_str(text).map_err(|e| syntax(e.to_string()))?;
            serde_json::to_value(doc).map_err(|e| syntax(e.to_string()))
        }
    }
}
