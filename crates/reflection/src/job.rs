//! The reflection job: window → request → model (or the offline statistics) → bounded, linted
//! lessons, or a recorded failure. Never panics, never returns an error to the tick.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use model::{FinishReason, LanguageModel, Message, ModelError, ModelRequest, Rates, Usage};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use skill_schema::Skill;
use types::{DroppedObservation, HeldLesson, NoteContent, Observation, TradeRecord, Uuid};

use crate::bounds::bound_lessons;
use crate::bullets::{Candidate, check, check_pairs, split_reply};
use crate::cadence::{LastNote, window_trades};
use crate::judge::{is_real_model, judge_request, judge_verdicts};
use crate::lint::LintResult;
use crate::observe::{
    Figures, RECORD_LESSONS_TOOL, capitalise, observation_of, parse_answer, record_lessons_tool,
    render, scope_of, setup_label, supports,
};
use crate::prompt::{MAX_WINDOW_TRADES, REFLECTION_SYSTEM_PROMPT, render_reflection_user};
use crate::stats::{STATS_REFLECTION_MODEL, stats_observations};

/// Output-token budget of a reflection call: the prompt asks for ≤ 300 tokens; 500 leaves room
/// for a model that overshoots a little (2,000 characters ≈ 500 tokens) without paying for more.
pub const REFLECTION_MAX_OUTPUT_TOKENS: u32 = 500;

/// Who writes the lessons.
#[derive(Clone)]
pub enum Reflector {
    /// `builtin/stats-reflection`: computed from the ledger, no model, no cost.
    Stats,
    /// A language model (any provider, or another `builtin/…` model).
    Model(Arc<dyn LanguageModel>),
}

impl Reflector {
    /// The model id recorded on the note.
    #[must_use]
    pub fn id(&self) -> &str {
        match self {
            Reflector::Stats => STATS_REFLECTION_MODEL,
            Reflector::Model(m) => m.id(),
        }
    }
}

impl fmt::Debug for Reflector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Reflector").field(&self.id()).finish()
    }
}

/// Turns the configured model string (`context.memory.reflection.model`) into a [`Reflector`]:
/// `builtin/stats-reflection` is handled here; every other id goes to `resolve` (the caller
/// passes e.g. a closure over `providers::resolve_model` with its environment and builtins).
///
/// # Errors
/// Whatever `resolve` returns for an id it cannot serve (unknown model, missing key).
pub fn resolve_reflection_model<F>(id: &str, resolve: F) -> Result<Reflector, ModelError>
where
    F: FnOnce(&str) -> Result<Arc<dyn LanguageModel>, ModelError>,
{
    if id.trim() == STATS_REFLECTION_MODEL {
        Ok(Reflector::Stats)
    } else {
        resolve(id).map(Reflector::Model)
    }
}

/// Which note a reflection writes and what it may read.
#[derive(Debug, Clone, Copy)]
pub struct ReflectionInput<'a> {
    /// The skill the deployment runs: its version is recorded, its `strategy.avoid` lints the
    /// lessons.
    pub skill: &'a Skill,
    /// The id of the skill's stored row (`db::Deployment::skill_id`), recorded on the note and
    /// on a failed run: the same skill id the stored note carries (which need not be the
    /// document's `Skill::skill_id`).
    pub skill_id: Uuid,
    /// The deployment the note belongs to (`None` = a skill-scoped note).
    pub deployment_id: Option<Uuid>,
    /// The deployment's ledger rows (any order, open rows allowed): the job keeps the closed
    /// trades with an exit after `last.window_end` (if any) and at or before `now`.
    pub trades: &'a [TradeRecord],
    /// The deployment's latest note, if any (flagged or not).
    pub last: Option<&'a LastNote>,
    /// The tick time: `generated_at` and `window_end` of the note.
    pub now: DateTime<Utc>,
    /// Prices of the model, for `cost_usd`; `None` when unknown (cost is then not recorded).
    pub rates: Option<Rates>,
}

/// A reflection note ready to store. The caller persists it, supersedes the previous active
/// note of the deployment when `lint.flagged` is false, and keeps it stored-but-inactive when
/// `lint.flagged` is true, until a person accepts it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteDraft {
    /// The stored skill row the note belongs to (see [`ReflectionInput::skill_id`]).
    pub skill_id: Uuid,
    /// The skill version the deployment ran when the note was generated.
    pub skill_version: u32,
    /// `None` = skill-scoped (only ever via [`crate::promote_to_skill_scope`]).
    pub deployment_id: Option<Uuid>,
    /// When the note was generated (UTC; the tick time of its run). A tick sees it only from
    /// this instant on.
    pub generated_at: DateTime<Utc>,
    /// Window, lessons, model and usage; tokens are always `Some` (0 for the statistics).
    #[serde(flatten)]
    pub content: NoteContent,
    /// Whether the text had to be cut to fit the bounds.
    pub cut: bool,
    /// The lesson defences' verdict (linter, grounding check, judge call); a flagged note is
    /// stored pending review and not injected until a person accepts it.
    pub lint: LintResult,
}

impl NoteDraft {
    /// What the cadence needs to know about this note once stored. `closed_trades_total` is the
    /// number of closed trades the deployment's ledger held at `generated_at`, if the caller
    /// keeps it (see [`LastNote::closed_trades_total`]).
    #[must_use]
    pub fn as_last_note(&self, closed_trades_total: Option<u32>) -> LastNote {
        LastNote {
            generated_at: self.generated_at,
            window_end: self.content.window_end,
            closed_trades_total,
        }
    }

    /// Whether the note may be injected without a person's review.
    #[must_use]
    pub fn injectable(&self) -> bool {
        !self.lint.flagged
    }
}

/// Why a reflection produced no note. The caller records it and keeps the previous note active.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReflectionFailure {
    /// No closed trade in the window: nothing to reflect on (the model was not called).
    NoTrades,
    /// The model call failed (provider error, timeout, unknown model, …).
    Model {
        /// The provider's error, or a note that the model reported an error finish.
        message: String,
    },
    /// The model answered without any usable bullet.
    EmptyReply,
}

impl fmt::Display for ReflectionFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReflectionFailure::NoTrades => f.write_str("no closed trades in the window"),
            ReflectionFailure::Model { message } => write!(f, "model call failed: {message}"),
            ReflectionFailure::EmptyReply => f.write_str("the model's reply held no lessons"),
        }
    }
}

/// A run that wrote no note: what it cost and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedReflection {
    /// The stored skill row the run was for.
    pub skill_id: Uuid,
    /// The skill version the deployment ran.
    pub skill_version: u32,
    /// The deployment the run was for (`None` = skill-scoped).
    pub deployment_id: Option<Uuid>,
    /// When the run happened (UTC; the tick time). The cadence backs off from it.
    pub attempted_at: DateTime<Utc>,
    /// Exclusive start of the window the run covered (UTC).
    pub window_start: DateTime<Utc>,
    /// Inclusive end of that window (UTC): `attempted_at`.
    pub window_end: DateTime<Utc>,
    /// Closed trades in the window (0 for [`ReflectionFailure::NoTrades`]).
    pub trades_considered: u32,
    /// The reflector's model id.
    pub model_used: String,
    /// Input tokens billed, cache reads and writes included (0 when the call failed).
    pub input_tokens: u64,
    /// Output tokens billed (0 when the call failed).
    pub output_tokens: u64,
    /// What the run cost in USD: 0 for the statistics; `None` when the model's rates are
    /// unknown, and for a model run that found no trades (no model was called).
    pub cost_usd: Option<Decimal>,
    /// Why no note was written.
    pub reason: ReflectionFailure,
}

/// What one reflection run produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum ReflectionOutcome {
    /// A note to store (flagged or not).
    Note(NoteDraft),
    /// No note; what the run cost and why.
    Failed(FailedReflection),
}

impl ReflectionOutcome {
    /// The note, when the run produced one.
    #[must_use]
    pub fn note(&self) -> Option<&NoteDraft> {
        match self {
            ReflectionOutcome::Note(n) => Some(n),
            ReflectionOutcome::Failed(_) => None,
        }
    }

    /// The failure, when the run produced no note.
    #[must_use]
    pub fn failure(&self) -> Option<&ReflectionFailure> {
        match self {
            ReflectionOutcome::Note(_) => None,
            ReflectionOutcome::Failed(f) => Some(&f.reason),
        }
    }
}

/// The window the job covers at `input.now`: the trades (capped at [`MAX_WINDOW_TRADES`], the
/// latest by exit kept), how many were left out, and the window's start.
fn select<'a>(input: &ReflectionInput<'a>) -> (Vec<&'a TradeRecord>, usize, DateTime<Utc>) {
    let mut trades = window_trades(input.trades, input.last, input.now);
    let start = match input.last {
        Some(l) => l.window_end,
        None => trades
            .iter()
            .map(|r| r.entry_tick_at)
            .min()
            .unwrap_or(input.now),
    };
    let omitted = trades.len().saturating_sub(MAX_WINDOW_TRADES);
    trades.drain(..omitted);
    (trades, omitted, start)
}

/// The exact request the model sees for `input` (also what the job sends), or `None` when the
/// window holds no trade.
#[must_use]
pub fn reflection_request(input: &ReflectionInput<'_>, model: &str) -> Option<ModelRequest> {
    let (trades, omitted, start) = select(input);
    if trades.is_empty() {
        return None;
    }
    Some(build_request(input, &trades, omitted, start, model))
}

fn build_request(
    input: &ReflectionInput<'_>,
    trades: &[&TradeRecord],
    omitted: usize,
    start: DateTime<Utc>,
    model_id: &str,
) -> ModelRequest {
    // The provider's model name is the part after `provider/`.
    let model = model_id
        .split_once('/')
        .map_or(model_id, |(_, name)| name)
        .to_owned();
    ModelRequest {
        model,
        system: REFLECTION_SYSTEM_PROMPT.to_owned(),
        messages: vec![Message::User {
            content: render_reflection_user(input.skill, trades, start, input.now, omitted),
        }],
        tools: vec![record_lessons_tool()],
        max_output_tokens: REFLECTION_MAX_OUTPUT_TOKENS,
        deadline: None,
    }
}

/// What a reflector answered, before any check.
enum Answer {
    /// Typed observations (a `record_lessons` call, JSON text, or the statistics); items that
    /// could not be read are left out.
    Typed { observations: Vec<Observation> },
    /// Plain text bullets; `truncated` when the model stopped on its token limit.
    Plain { text: String, truncated: bool },
}

/// The model's answer: its `record_lessons` calls when it made any (their observations in call
/// order), else its text read as a `record_lessons` JSON document when it is one, else its text
/// as plain bullets.
fn answer_of(resp: &model::ModelResponse) -> Answer {
    let calls: Vec<&model::ToolCall> = resp
        .tool_calls
        .iter()
        .filter(|c| c.name == RECORD_LESSONS_TOOL)
        .collect();
    let text = resp.text.clone().unwrap_or_default();
    if calls.is_empty() {
        let t = text.trim_start();
        if (t.starts_with('{') || t.starts_with('[') || t.starts_with("```json"))
            && let Ok(parsed) = parse_answer(&text)
        {
            return Answer::Typed {
                observations: parsed.observations,
            };
        }
        return Answer::Plain {
            text,
            truncated: resp.finish == FinishReason::Length,
        };
    }
    let observations = calls
        .into_iter()
        .filter_map(|c| parse_answer(&c.arguments).ok())
        .flat_map(|p| p.observations)
        .collect();
    Answer::Typed { observations }
}

/// Runs one reflection. Never fails and never panics: every problem becomes
/// [`ReflectionOutcome::Failed`] with no note, so the caller keeps the previous note active and
/// the tick goes on.
///
/// - The window: closed trades with an exit after `last.window_end` (if any) and at or before
///   `now` (point in time), oldest exit first, the latest [`MAX_WINDOW_TRADES`] kept.
/// - No trade in it → `Failed(NoTrades)`, no model call.
/// - [`Reflector::Stats`] → [`crate::stats_observations`], 0 tokens, cost 0.
/// - [`Reflector::Model`] → one call with [`REFLECTION_SYSTEM_PROMPT`], the rendered window and
///   the `record_lessons` tool; a model error → `Failed(Model)`.
/// - **Typed answer** (a `record_lessons` call, or the same JSON as text): each observation's
///   setup is looked up in the window, its figures computed and its finding tested
///   (`crate::observe`); one the ledger does not bear out is dropped and recorded
///   (`content.dropped`), the others rendered. An observation's note is held for a person
///   ([`NOTE_HELD`]): no text of the model's reaches a prompt without one.
/// - **Plain bullets**: each bullet is checked alone (`crate::bullets`); a failing bullet is
///   held (`content.held`); one that passes is read as the observation it makes
///   ([`crate::observation_of`]) and rendered like a typed one.
/// - For a real model (not `builtin/…`, see [`crate::is_real_model`]), a second, separate call
///   ([`crate::judge_request`]) must clear each plain bullet that passed the deterministic
///   layers; a bullet it does not clear is held, a failed check call holds them all. Its tokens
///   and cost are added to the note's.
/// - The rendered lessons become `lessons_text` (bounded by [`crate::bound_lessons`]); the note
///   is then injectable. When nothing was rendered but bullets were held, the note is stored
///   pending review with the held bullets as its text; when nothing usable is left →
///   `Failed(EmptyReply)`.
pub async fn reflect(input: ReflectionInput<'_>, reflector: &Reflector) -> ReflectionOutcome {
    let (trades, omitted, start) = select(&input);
    let trades_considered = u32::try_from(trades.len()).unwrap_or(u32::MAX);
    let failed = |reason, usage: Usage, cost| {
        ReflectionOutcome::Failed(FailedReflection {
            skill_id: input.skill_id,
            skill_version: input.skill.version,
            deployment_id: input.deployment_id,
            attempted_at: input.now,
            window_start: start,
            window_end: input.now,
            trades_considered,
            model_used: reflector.id().to_owned(),
            input_tokens: usage.total_input(),
            output_tokens: usage.output,
            cost_usd: cost,
            reason,
        })
    };
    if trades.is_empty() {
        let cost = matches!(reflector, Reflector::Stats).then_some(Decimal::ZERO);
        return failed(ReflectionFailure::NoTrades, Usage::default(), cost);
    }

    let (answer, usage, cost) = match reflector {
        Reflector::Stats => (
            Answer::Typed {
                observations: stats_observations(&trades),
            },
            Usage::default(),
            Some(Decimal::ZERO),
        ),
        Reflector::Model(model) => {
            let request = build_request(&input, &trades, omitted, start, model.id());
            match model.generate(&request).await {
                Err(e) => {
                    return failed(
                        ReflectionFailure::Model {
                            message: e.to_string(),
                        },
                        Usage::default(),
                        input.rates.map(|_| Decimal::ZERO),
                    );
                }
                Ok(resp) => {
                    let cost = input.rates.map(|r| r.cost(&resp.usage));
                    if resp.finish == FinishReason::Error {
                        return failed(
                            ReflectionFailure::Model {
                                message: "the model reported an error finish".to_owned(),
                            },
                            resp.usage,
                            cost,
                        );
                    }
                    (answer_of(&resp), resp.usage, cost)
                }
            }
        }
    };

    let strategy = &input.skill.strategy;
    let mut sheet = Sheet::default();
    let (usage, cost) = match answer {
        Answer::Typed { observations } => {
            for o in observations {
                sheet.observe(o, &trades);
            }
            (usage, cost)
        }
        Answer::Plain { text, truncated } => {
            let (mut cs, cut) = split_reply(&text, truncated, strategy);
            sheet.cut = cut;
            for c in &mut cs {
                check(c, strategy, &trades);
            }
            check_pairs(&mut cs);
            let (usage, cost) = judge(&mut cs, &input, reflector, usage, cost).await;
            for c in cs {
                match c
                    .passes()
                    .then(|| observation_of(&c.text, &trades))
                    .flatten()
                {
                    Some(o) => sheet.observe(o, &trades),
                    None if c.passes() => sheet.held.push(HeldLesson {
                        text: c.text,
                        reasons: vec!["names no setup of the window".to_owned()],
                    }),
                    None => sheet.held.push(c.held()),
                }
            }
            (usage, cost)
        }
    };
    sheet.into_outcome(
        &input,
        reflector,
        start,
        trades_considered,
        usage,
        cost,
        failed,
    )
}

/// Why an observation's note is held: the model's own words reach a prompt only through a
/// person.
pub const NOTE_HELD: &str =
    "an observation's note is the model's own words: it reaches a prompt once a person accepts it";

/// The judge call (real models only) on the bullets that passed the deterministic layers: a
/// bullet it does not clear is held.
async fn judge(
    cs: &mut [Candidate],
    input: &ReflectionInput<'_>,
    reflector: &Reflector,
    mut usage: Usage,
    mut cost: Option<Decimal>,
) -> (Usage, Option<Decimal>) {
    let Reflector::Model(model) = reflector else {
        return (usage, cost);
    };
    let asked: Vec<usize> = (0..cs.len()).filter(|&i| cs[i].passes()).collect();
    if !is_real_model(model.id()) || asked.is_empty() {
        return (usage, cost);
    }
    let text: String = asked.iter().map(|&i| format!("{}\n", cs[i].text)).collect();
    let request = judge_request(input.skill, &text, model.id());
    let verdicts: Vec<Option<String>> = match model.generate(&request).await {
        Err(e) => vec![Some(format!("the check call failed: {e}")); asked.len()],
        Ok(resp) => {
            if let Some(rates) = input.rates {
                let extra = rates.cost(&resp.usage);
                cost = Some(cost.unwrap_or(Decimal::ZERO).saturating_add(extra));
            }
            usage += resp.usage;
            if resp.finish == FinishReason::Error {
                vec![Some("the check call reported an error finish".to_owned()); asked.len()]
            } else {
                judge_verdicts(resp.text.as_deref().unwrap_or_default(), asked.len())
            }
        }
    };
    for (i, verdict) in asked.into_iter().zip(verdicts) {
        if let Some(why) = verdict {
            cs[i].reasons.push(why);
        }
    }
    (usage, cost)
}

/// The lessons of one reflection on their way to the note.
#[derive(Default)]
struct Sheet {
    /// The rendered bullets, one per accepted observation.
    rendered: Vec<String>,
    observations: Vec<Observation>,
    dropped: Vec<DroppedObservation>,
    held: Vec<HeldLesson>,
    /// Whether the model's last bullet was cut off by its output limit and dropped.
    cut: bool,
}

impl Sheet {
    /// Checks one observation against the window and renders it (or drops it, recorded); its
    /// note, if any, is held for a person.
    fn observe(&mut self, mut o: Observation, trades: &[&TradeRecord]) {
        if let Some(note) = o.note.take() {
            let (cut, _) = types::cut_chars(note.trim(), types::MAX_OBSERVATION_NOTE_CHARS);
            self.held.push(HeldLesson {
                text: format!("- {}: {cut}", capitalise(&setup_label(&o.setup))),
                reasons: vec![NOTE_HELD.to_owned()],
            });
        }
        let scope = scope_of(&o.setup, trades);
        if scope.is_empty() {
            self.dropped.push(DroppedObservation {
                reason: format!(
                    "names a setup the window does not have ({})",
                    setup_label(&o.setup)
                ),
                observation: o,
            });
            return;
        }
        let figures = Figures::of(&scope, trades);
        if let Err(reason) = supports(&o, &figures) {
            self.dropped.push(DroppedObservation {
                observation: o,
                reason,
            });
            return;
        }
        if self.observations.contains(&o) {
            self.dropped.push(DroppedObservation {
                observation: o,
                reason: "repeats an observation made already".to_owned(),
            });
            return;
        }
        self.rendered.push(render(&o, &figures, &scope));
        self.observations.push(o);
    }

    /// The note (or the failure) the sheet comes to.
    #[allow(clippy::too_many_arguments)]
    fn into_outcome<F>(
        self,
        input: &ReflectionInput<'_>,
        reflector: &Reflector,
        start: DateTime<Utc>,
        trades_considered: u32,
        usage: Usage,
        cost: Option<Decimal>,
        failed: F,
    ) -> ReflectionOutcome
    where
        F: Fn(ReflectionFailure, Usage, Option<Decimal>) -> ReflectionOutcome,
    {
        let pending = self.rendered.is_empty();
        let source = if pending {
            self.held
                .iter()
                .map(|h| h.text.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        } else {
            self.rendered.join("\n")
        };
        let bounded = bound_lessons(&source, false);
        if bounded.text.is_empty() {
            return failed(ReflectionFailure::EmptyReply, usage, cost);
        }
        let reasons: Vec<String> = if pending {
            self.held
                .iter()
                .enumerate()
                .flat_map(|(i, h)| {
                    h.reasons
                        .iter()
                        .map(move |r| format!("bullet {}: {r}", i + 1))
                })
                .collect()
        } else {
            Vec::new()
        };
        ReflectionOutcome::Note(NoteDraft {
            skill_id: input.skill_id,
            skill_version: input.skill.version,
            deployment_id: input.deployment_id,
            generated_at: input.now,
            content: NoteContent {
                window_start: start,
                window_end: input.now,
                trades_considered,
                lessons_text: bounded.text,
                model_used: reflector.id().to_owned(),
                input_tokens: Some(usage.total_input()),
                output_tokens: Some(usage.output),
                cost_usd: cost,
                observations: self.observations,
                dropped: self.dropped,
                held: self.held,
            },
            cut: bounded.cut || self.cut,
            lint: LintResult {
                flagged: pending,
                reasons,
            },
        })
    }
}
