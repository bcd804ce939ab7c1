//! `propose_order`: the one tool that acts. It validates and records the model's proposal; it
//! never executes anything. The execution engine decides after the model loop.

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};
use types::{JsonText, OrderAction, ProposedAction};

use crate::context::{RunMode, ToolContext};
use crate::error::ToolError;
use crate::registry::{ArgsSpec, Tool, ToolOutput, ToolOutputFuture};

pub(crate) const NAME: &str = "propose_order";

/// Longest `reason`, in characters. Reasons flow into the ledger and future prompts, so they are
/// bounded here, on the write path.
pub const MAX_REASON_CHARS: usize = 280;

/// The arguments of `propose_order` as the model sends them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposeOrderArgs {
    /// open_long / open_short open or add to a position (a proposal against an open position of
    /// the other side flips it); close exits the whole position; reduce exits size_usd of it;
    /// no_op stands aside.
    pub action: OrderAction,
    /// One of the symbols this deployment trades.
    #[schemars(length(min = 1, max = 32))]
    pub symbol: String,
    /// Notional in USD (margin × leverage). Required for open_long, open_short and reduce;
    /// ignored for close and no_op.
    #[serde(default)]
    #[schemars(with = "f64", range(min = 0))]
    pub size_usd: Option<Decimal>,
    /// Leverage for an open (1 = none). Ignored for close, reduce and no_op.
    #[serde(default)]
    #[schemars(with = "f64", range(min = 1, max = 100))]
    pub leverage: Option<Decimal>,
    /// Why, in one or two sentences (at most 280 characters). Stored with the trade.
    #[schemars(length(min = 1, max = 280))]
    pub reason: String,
    /// Conviction 0–100.
    #[serde(default)]
    #[schemars(range(min = 0, max = 100))]
    pub confidence: Option<u8>,
    /// Protective stop price (opens only).
    #[serde(default)]
    #[schemars(with = "f64", range(min = 0))]
    pub stop: Option<Decimal>,
    /// Take-profit price (opens only).
    #[serde(default)]
    #[schemars(with = "f64", range(min = 0))]
    pub target: Option<Decimal>,
}

/// Collapses every run of whitespace (newlines included) to one space and trims: external text
/// stays on one line, so it cannot forge a prompt heading.
#[must_use]
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    push_one_line(&mut out, text);
    out
}

/// Appends [`one_line`]`(text)` to `out` (no temporary strings).
pub fn push_one_line(out: &mut String, text: &str) {
    // Fast path: printable ASCII words separated by single spaces are already on one line.
    // Written as folds without early exit, which the compiler vectorizes.
    let bytes = text.as_bytes();
    if let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) {
        let ascii = bytes
            .iter()
            .fold(true, |ok, &c| ok & (c >= b' ') & c.is_ascii());
        let single_spaces = bytes
            .iter()
            .zip(&bytes[1..])
            .fold(true, |ok, (&a, &b)| ok & !((a == b' ') & (b == b' ')));
        if first != b' ' && last != b' ' && ascii && single_spaces {
            out.push_str(text);
            return;
        }
    }
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(word);
    }
}

/// Checks the rules the schema cannot express and returns the proposal as recorded.
///
/// Rules: the symbol is one the deployment trades; opens and reduces carry a positive
/// `size_usd`; prices are positive; a long's stop is below its target and a short's above; the
/// reason is not blank. For `close` and `no_op` the sizing fields are dropped (they mean
/// nothing there), as are stop/target for `reduce`. The reason is put on one line.
///
/// # Errors
/// [`ToolError::InvalidArguments`] listing every broken rule.
pub fn validate_proposal(
    args: ProposeOrderArgs,
    ctx: &ToolContext,
) -> Result<ProposedAction, ToolError> {
    let mut problems = Vec::new();
    if !ctx.trades_symbol(&args.symbol) {
        problems.push(ctx.not_traded());
    }
    let reason = one_line(&args.reason);
    if reason.is_empty() {
        problems.push("reason: must not be blank".to_owned());
    } else if reason.chars().count() > MAX_REASON_CHARS {
        problems.push(format!(
            "reason: at most {MAX_REASON_CHARS} characters (got {})",
            reason.chars().count()
        ));
    }
    let opens = matches!(args.action, OrderAction::OpenLong | OrderAction::OpenShort);
    let sized = opens || args.action == OrderAction::Reduce;
    if sized {
        match args.size_usd {
            None => problems.push(format!("size_usd: required for {}", args.action)),
            Some(s) if s <= Decimal::ZERO => {
                problems.push(format!("size_usd: must be greater than 0 (got {s})"));
            }
            Some(_) => {}
        }
    }
    if let Some(l) = args.leverage
        && l < Decimal::ONE
    {
        problems.push(format!("leverage: must be at least 1 (got {l})"));
    }
    for (name, price) in [("stop", args.stop), ("target", args.target)] {
        if let Some(p) = price
            && p <= Decimal::ZERO
        {
            problems.push(format!("{name}: must be greater than 0 (got {p})"));
        }
    }
    if opens && let (Some(stop), Some(target)) = (args.stop, args.target) {
        if args.action == OrderAction::OpenLong && stop >= target {
            problems.push(format!(
                "stop: a long's stop ({stop}) must be below its target ({target})"
            ));
        }
        if args.action == OrderAction::OpenShort && stop <= target {
            problems.push(format!(
                "stop: a short's stop ({stop}) must be above its target ({target})"
            ));
        }
    }
    if !problems.is_empty() {
        return Err(ToolError::invalid(NAME, problems));
    }
    Ok(ProposedAction {
        action: args.action,
        symbol: args.symbol,
        size_usd: if sized { args.size_usd } else { None },
        leverage: if opens { args.leverage } else { None },
        reason,
        confidence: args.confidence,
        stop: if opens { args.stop } else { None },
        target: if opens { args.target } else { None },
    })
}

/// The proposal a successful `propose_order` result carries.
///
/// The tick loop uses this to extract the proposal from the recorded steps, so the steps stay the
/// single source of truth.
#[must_use]
pub fn proposal_from_result(result: &Value) -> Option<ProposedAction> {
    if result.get("status")?.as_str()? != "recorded" {
        return None;
    }
    // Read in place: no copy of the result's tree.
    ProposedAction::deserialize(result.get("proposal")?).ok()
}

/// The `propose_order` tool.
pub struct ProposeOrder {
    ctx: ToolContext,
    args: &'static ArgsSpec,
}

impl ProposeOrder {
    /// `propose_order` for `ctx`: validates against `ctx`'s symbols ([`validate_proposal`]) and
    /// refuses in [`RunMode::ReadOnly`].
    #[must_use]
    pub fn new(ctx: ToolContext) -> Self {
        static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
        Self {
            ctx,
            args: ARGS.get_or_init(ArgsSpec::of::<ProposeOrderArgs>),
        }
    }
}

impl Tool for ProposeOrder {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Propose this tick's order (or no_op). The proposal is recorded, not executed: after your \
         turn the execution engine validates it against the risk caps and decides. Call it once; \
         a later call replaces the earlier proposal. If it returns an error, fix the arguments \
         and call it again."
    }

    fn parameters(&self) -> Arc<Value> {
        Arc::clone(&self.args.schema)
    }

    fn can_act(&self) -> bool {
        true
    }

    fn call(&self, args: Value) -> Result<Value, ToolError> {
        self.record(args).map(|proposal| recorded_value(&proposal))
    }

    /// The same result as [`Tool::call`]'s value, its text written straight from the
    /// proposal (no `serde_json::Value` tree built, written and read back for the proposal).
    fn call_output(&self, args: Value) -> ToolOutputFuture<'_> {
        let output = self.record(args).map(|proposal| {
            let result = recorded_text(&proposal);
            ToolOutput {
                result,
                proposal: Some(proposal),
            }
        });
        Box::pin(std::future::ready(output))
    }
}

impl ProposeOrder {
    /// The proposal `args` make, validated; refused in a read-only context.
    fn record(&self, args: Value) -> Result<ProposedAction, ToolError> {
        if self.ctx.mode == RunMode::ReadOnly {
            return Err(ToolError::ReadOnly {
                tool: NAME.to_owned(),
            });
        }
        let args: ProposeOrderArgs = self.args.parser.parse(NAME, args)?;
        validate_proposal(args, &self.ctx)
    }
}

/// What `propose_order` tells the model with a recorded proposal.
const RECORDED_NOTE: &str = "Recorded, not executed. The execution engine validates it against \
                             the risk caps after your turn; calling propose_order again \
                             replaces it.";

/// `propose_order`'s result for `proposal`, as a value.
fn recorded_value(proposal: &ProposedAction) -> Value {
    json!({
        "status": "recorded",
        "proposal": proposal,
        "note": RECORDED_NOTE,
    })
}

/// [`recorded_value`]'s text for `proposal`. A rule-based model proposes the same no-op on
/// most ticks: the last text serialised on this thread is reused when `proposal` is the same
/// record ([`ProposedAction::same_text`]: the text is a function of the record alone), so the
/// memo holds one proposal and its text per thread and never changes a result.
fn recorded_text(proposal: &ProposedAction) -> JsonText {
    thread_local! {
        static LAST: RefCell<Option<(ProposedAction, JsonText)>> = const { RefCell::new(None) };
    }
    let fresh = || {
        JsonText::new(&Recorded(proposal))
            // Unreachable (string keys, decimals written as strings); the value's text then.
            .unwrap_or_else(|_| JsonText::from(&recorded_value(proposal)))
    };
    // Not re-entered (nothing below calls back here) and not called while the thread's
    // locals are destroyed; either would only mean serialising afresh.
    LAST.try_with(|last| {
        let Ok(mut last) = last.try_borrow_mut() else {
            return fresh();
        };
        if let Some((before, text)) = last.as_ref()
            && before.same_text(proposal)
        {
            return text.clone();
        }
        let text = fresh();
        *last = Some((proposal.clone(), text.clone()));
        text
    })
    .unwrap_or_else(|_| fresh())
}

/// [`recorded_value`] serialised directly: the keys in the order a `serde_json::Value` map
/// keeps them (sorted), each value as `ProposedAction`'s own `Serialize` writes it, so the text
/// is the value's byte for byte (tested).
struct Recorded<'a>(&'a ProposedAction);

impl Serialize for Recorded<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_struct("Recorded", 3)?;
        map.serialize_field("note", RECORDED_NOTE)?;
        map.serialize_field("proposal", &SortedProposal(self.0))?;
        map.serialize_field("status", "recorded")?;
        map.end()
    }
}

/// A `ProposedAction` with its fields in sorted order.
struct SortedProposal<'a>(&'a ProposedAction);

impl Serialize for SortedProposal<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Destructured whole: a field added to `ProposedAction` fails to compile here.
        let ProposedAction {
            action,
            symbol,
            size_usd,
            leverage,
            reason,
            confidence,
            stop,
            target,
        } = self.0;
        let mut map = serializer.serialize_struct("ProposedAction", 8)?;
        map.serialize_field("action", action)?;
        map.serialize_field("confidence", confidence)?;
        map.serialize_field("leverage", leverage)?;
        map.serialize_field("reason", reason)?;
        map.serialize_field("size_usd", size_usd)?;
        map.serialize_field("stop", stop)?;
        map.serialize_field("symbol", symbol)?;
        map.serialize_field("target", target)?;
        map.end()
    }
}
