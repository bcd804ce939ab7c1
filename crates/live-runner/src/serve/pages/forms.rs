//! The pages' form bodies and their checks. Every field arrives as optional text, so a
//! form a browser (or anyone) posts always deserialises; the checks below turn what is wrong
//! into a message the page shows next to the form, never a 4xx/5xx without a page. Every text
//! field is held to [`crate::serve::input`]'s rule (no control character; line breaks and tabs
//! in a fact only) before anything else is checked or quoted back.

use crate::serve::api::ChatRequest;
use crate::serve::conversations::parse_mode;
use crate::serve::error::validation_error;
use crate::serve::input::{self, Lines};
use db::{FactEdit, Forget};
use serde::Deserialize;
use types::{
    ArchiveReason, FactConfidence, MAX_FACT_CHARS, MAX_FACT_TOPIC_CHARS, MIN_FACT_CHARS, Uuid,
};
use validator::Validate;

/// The "add a fact" form (also what the page re-renders after a refused submission).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct AddForm {
    #[serde(default)]
    pub(crate) fact: Option<String>,
    #[serde(default)]
    pub(crate) topic: Option<String>,
    #[serde(default)]
    pub(crate) confidence: Option<String>,
}

/// The per-row edit form (text and topic).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct EditForm {
    #[serde(default)]
    pub(crate) fact: Option<String>,
    #[serde(default)]
    pub(crate) topic: Option<String>,
}

/// The per-row promote / demote form.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ConfidenceForm {
    #[serde(default)]
    pub(crate) confidence: Option<String>,
}

/// The per-row archive form.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ArchiveForm {
    #[serde(default)]
    pub(crate) reason: Option<String>,
}

/// A deployment control's form: an optional reason and, for stop, the `flatten` checkbox.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ControlForm {
    #[serde(default)]
    pub(crate) reason: Option<String>,
    #[serde(default)]
    pub(crate) flatten: Option<String>,
}

impl ControlForm {
    /// The reason (trimmed; empty means none; one line; its bounds are the store's) and whether
    /// the checkbox was ticked.
    pub(crate) fn check(&self) -> Result<(Option<String>, bool), String> {
        let reason = self
            .reason
            .as_deref()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned);
        if let Some(r) = &reason {
            input::check("reason", r, Lines::One)?;
        }
        let flatten = matches!(self.flatten.as_deref(), Some("on" | "true" | "1"));
        Ok((reason, flatten))
    }
}

/// The chat page's form: a new conversation's first `message` with its `mode` and
/// `deployment`, or the next `message` of a kept one (alone: the server holds the history).
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChatForm {
    #[serde(default)]
    pub(crate) message: Option<String>,
    #[serde(default)]
    pub(crate) mode: Option<String>,
    #[serde(default)]
    pub(crate) deployment: Option<String>,
}

impl ChatForm {
    /// The `POST /api/chat` request this form makes, continuing `conversation` when given: the
    /// message trimmed, its line breaks `\n` (a textarea sends `\r\n`), held to the API's
    /// bounds; the mode `coach`, `authoring` or `ops` (empty: the API's default); the
    /// deployment an id (empty: none).
    pub(crate) fn request(&self, conversation: Option<Uuid>) -> Result<ChatRequest, String> {
        let message = self.message.as_deref().unwrap_or_default().trim();
        input::check("message", message, Lines::Many)?;
        if message.is_empty() {
            return Err("message: write a message to send".to_owned());
        }
        let mode = match self.mode.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(m) => Some(
                parse_mode(m)
                    .ok_or_else(|| "mode: expected `coach`, `authoring` or `ops`".to_owned())?,
            ),
        };
        let deployment_id = match self.deployment.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(d) => {
                Some(Uuid::parse_str(d).map_err(|_| "deployment: not a deployment id".to_owned())?)
            }
        };
        let request = ChatRequest {
            message: Some(message.replace("\r\n", "\n")),
            conversation_id: conversation,
            messages: Vec::new(),
            mode,
            deployment_id,
        };
        request
            .validate()
            .map_err(|e| validation_error(&e).message)?;
        Ok(request)
    }

    /// The message as typed, to put back in the form after a refusal.
    pub(crate) fn draft(&self) -> &str {
        self.message.as_deref().unwrap_or_default()
    }
}

/// The login form.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct LoginForm {
    #[serde(default)]
    pub(crate) token: Option<String>,
}

impl LoginForm {
    /// The pasted token, trimmed (empty when none), on one line.
    pub(crate) fn check(&self) -> Result<String, String> {
        let token = self.token.as_deref().unwrap_or_default().trim();
        input::check("token", token, Lines::One)?;
        Ok(token.to_owned())
    }
}

/// A checked "add a fact" submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NewFactInput {
    pub(crate) fact: String,
    pub(crate) topic: Option<String>,
    pub(crate) confidence: FactConfidence,
}

/// The fact text, trimmed, its line breaks `\n` (a textarea sends `\r\n`), within the shared
/// bounds.
fn fact_text(raw: Option<&str>) -> Result<String, String> {
    let fact = raw.unwrap_or_default().trim();
    input::check("fact", fact, Lines::Many)?;
    let fact = fact.replace("\r\n", "\n");
    let n = fact.chars().count();
    if !(MIN_FACT_CHARS..=MAX_FACT_CHARS).contains(&n) {
        return Err(format!(
            "fact: must be {MIN_FACT_CHARS} to {MAX_FACT_CHARS} characters (got {n})"
        ));
    }
    Ok(fact)
}

/// The topic, trimmed, one line; empty means none.
fn topic_text(raw: Option<&str>) -> Result<Option<String>, String> {
    let topic = raw.unwrap_or_default().trim();
    input::check("topic", topic, Lines::One)?;
    if topic.is_empty() {
        return Ok(None);
    }
    let n = topic.chars().count();
    if n > MAX_FACT_TOPIC_CHARS {
        return Err(format!(
            "topic: at most {MAX_FACT_TOPIC_CHARS} characters (got {n})"
        ));
    }
    Ok(Some(topic.to_owned()))
}

fn confidence(raw: Option<&str>) -> Result<FactConfidence, String> {
    let raw = raw.unwrap_or_default().trim();
    input::check("confidence", raw, Lines::One)?;
    FactConfidence::parse(raw).ok_or_else(|| {
        format!(
            "confidence: expected `asserted` or `inferred` (got `{}`)",
            shorten(raw)
        )
    })
}

/// At most 40 characters of a value quoted back in a message.
fn shorten(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if s.chars().count() > 40 {
        out.push('…');
    }
    out
}

impl AddForm {
    /// Checks the submission.
    pub(crate) fn check(&self) -> Result<NewFactInput, String> {
        Ok(NewFactInput {
            fact: fact_text(self.fact.as_deref())?,
            topic: topic_text(self.topic.as_deref())?,
            confidence: match self.confidence.as_deref() {
                None | Some("") => FactConfidence::Asserted,
                c => confidence(c)?,
            },
        })
    }
}

impl EditForm {
    /// The edit: new text and topic (an empty topic clears it); confidence unchanged.
    pub(crate) fn check(&self) -> Result<FactEdit, String> {
        Ok(FactEdit {
            fact: Some(fact_text(self.fact.as_deref())?),
            confidence: None,
            topic: Some(topic_text(self.topic.as_deref())?),
        })
    }
}

impl ConfidenceForm {
    /// The edit that sets the confidence only.
    pub(crate) fn check(&self) -> Result<FactEdit, String> {
        Ok(FactEdit {
            fact: None,
            confidence: Some(confidence(self.confidence.as_deref())?),
            topic: None,
        })
    }
}

impl ArchiveForm {
    /// The reason a person may give on the page (the agent's own `agent_forget` is not one).
    pub(crate) fn check(&self) -> Result<ArchiveReason, String> {
        input::check(
            "reason",
            self.reason.as_deref().unwrap_or_default(),
            Lines::One,
        )?;
        match self.reason.as_deref().map(str::trim) {
            Some("user_deleted") | None | Some("") => Ok(ArchiveReason::UserDeleted),
            Some("user_corrected") => Ok(ArchiveReason::UserCorrected),
            Some(other) => Err(format!(
                "reason: expected `user_deleted` or `user_corrected` (got `{}`)",
                shorten(other)
            )),
        }
    }
}

/// The [`Forget`] a page archive writes.
pub(crate) fn forget(reason: ArchiveReason, at: chrono::DateTime<chrono::Utc>) -> Forget {
    Forget {
        reason,
        at,
        actor: crate::serve::api::PROFILE_ACTOR.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_form_trims_defaults_and_bounds() {
        let ok = AddForm {
            fact: Some("  I never trade alts. \n".into()),
            topic: Some(" ".into()),
            confidence: None,
        }
        .check()
        .unwrap();
        assert_eq!(ok.fact, "I never trade alts.");
        assert_eq!(ok.topic, None);
        assert_eq!(ok.confidence, FactConfidence::Asserted);

        let short = AddForm {
            fact: Some(" abc ".into()),
            ..AddForm::default()
        };
        assert_eq!(
            short.check().unwrap_err(),
            "fact: must be 4 to 500 characters (got 3)"
        );
        let long_topic = AddForm {
            fact: Some("four".into()),
            topic: Some("t".repeat(MAX_FACT_TOPIC_CHARS + 1)),
            confidence: Some("inferred".into()),
        };
        assert!(
            long_topic
                .check()
                .unwrap_err()
                .starts_with("topic: at most")
        );
        let bad = AddForm {
            fact: Some("four".into()),
            topic: None,
            confidence: Some("certain".into()),
        };
        assert!(bad.check().unwrap_err().contains("got `certain`"));
    }

    #[test]
    fn control_characters_are_refused_naming_the_field() {
        let nul = AddForm {
            fact: Some("I never\0 trade alts.".into()),
            ..AddForm::default()
        };
        assert!(
            nul.check()
                .unwrap_err()
                .starts_with("fact: a control character (U+0000)")
        );
        let lines = AddForm {
            fact: Some("Two rules:\r\n- no alts\n\t- no leverage".into()),
            topic: Some("risk".into()),
            confidence: None,
        }
        .check()
        .unwrap();
        assert_eq!(lines.fact, "Two rules:\n- no alts\n\t- no leverage");
        let topic = AddForm {
            fact: Some("four".into()),
            topic: Some("ri\nsk".into()),
            confidence: None,
        };
        assert!(
            topic
                .check()
                .unwrap_err()
                .starts_with("topic: a control character (U+000A)")
        );
        assert!(
            EditForm {
                fact: Some("bell\u{7}".into()),
                topic: None
            }
            .check()
            .unwrap_err()
            .starts_with("fact:")
        );
        assert!(
            ConfidenceForm {
                confidence: Some("asserted\0".into())
            }
            .check()
            .unwrap_err()
            .starts_with("confidence: a control character")
        );
        assert!(
            ArchiveForm {
                reason: Some("user_deleted\u{1b}".into())
            }
            .check()
            .unwrap_err()
            .starts_with("reason: a control character")
        );
        let control = ControlForm {
            reason: Some("CPI\0".into()),
            flatten: None,
        };
        assert!(
            control
                .check()
                .unwrap_err()
                .starts_with("reason: a control character")
        );
        assert_eq!(
            ControlForm {
                reason: Some(" CPI at 14:30 ".into()),
                flatten: Some("on".into())
            }
            .check()
            .unwrap(),
            (Some("CPI at 14:30".to_owned()), true)
        );
        assert!(
            LoginForm {
                token: Some("a.b\0.c".into())
            }
            .check()
            .unwrap_err()
            .starts_with("token: a control character")
        );
    }

    #[test]
    fn the_chat_form_makes_the_apis_request() {
        let conversation = Uuid::from_u128(7);
        let next = ChatForm {
            message: Some("  Two things:\r\n- one\n\t- two  ".into()),
            ..ChatForm::default()
        }
        .request(Some(conversation))
        .unwrap();
        assert_eq!(next.message.as_deref(), Some("Two things:\n- one\n\t- two"));
        assert_eq!(next.conversation_id, Some(conversation));
        assert_eq!((next.mode, next.deployment_id), (None, None));
        let deployment = Uuid::from_u128(9);
        let start = ChatForm {
            message: Some("Pause it.".into()),
            mode: Some("ops".into()),
            deployment: Some(deployment.to_string()),
        }
        .request(None)
        .unwrap();
        assert_eq!(start.mode, Some(prompt_compose::ChatMode::Ops));
        assert_eq!(start.deployment_id, Some(deployment));
        let refused = |form: ChatForm| form.request(None).unwrap_err();
        assert_eq!(
            refused(ChatForm {
                message: Some(" \n ".into()),
                ..ChatForm::default()
            }),
            "message: write a message to send"
        );
        assert!(
            refused(ChatForm {
                message: Some("bell\u{7}".into()),
                ..ChatForm::default()
            })
            .starts_with("message: a control character (U+0007)")
        );
        assert_eq!(
            refused(ChatForm {
                message: Some("x".repeat(8001)),
                ..ChatForm::default()
            }),
            "message: must be 1..=8000 characters"
        );
        assert_eq!(
            refused(ChatForm {
                message: Some("hi".into()),
                mode: Some("<b>admin</b>".into()),
                ..ChatForm::default()
            }),
            "mode: expected `coach`, `authoring` or `ops`"
        );
        assert_eq!(
            refused(ChatForm {
                message: Some("hi".into()),
                deployment: Some("not-an-id".into()),
                ..ChatForm::default()
            }),
            "deployment: not a deployment id"
        );
    }

    #[test]
    fn row_forms() {
        let c = ConfidenceForm {
            confidence: Some("asserted".into()),
        }
        .check()
        .unwrap();
        assert_eq!(c.confidence, Some(FactConfidence::Asserted));
        assert_eq!(c.fact, None);
        let e = EditForm {
            fact: Some("Risk 1% a trade".into()),
            topic: Some(String::new()),
        }
        .check()
        .unwrap();
        assert_eq!(e.topic, Some(None));
        assert_eq!(
            ArchiveForm {
                reason: Some("user_corrected".into())
            }
            .check()
            .unwrap(),
            ArchiveReason::UserCorrected
        );
        assert!(
            ArchiveForm {
                reason: Some("agent_forget".into())
            }
            .check()
            .is_err()
        );
    }
}
