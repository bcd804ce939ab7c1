//! The outcome memory as a set of tools outside a tick: what `sim-worker mcp-serve` and
//! `live-runner mcp-serve` expose over MCP (seed 003's claude-mem role) — the six recall tools,
//! each call as of the clock's time, and `annotate`, which writes.
//!
//! The tools are the tick's own ([`tools::RecallTool`] over [`StoreMemory`]): an MCP client and
//! a trading agent asking the same question of the same memory at the same time get the same
//! answer.

use std::sync::{Arc, OnceLock};

use db::{
    AnnotationTarget, DbError, LedgerStore, MemoryScope, NewAnnotation, OutcomeStore, RegistryStore,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tools::{
    ArgsSpec, DataError, Preloaded, RECALL_TOOLS, RecallTool, RunMode, Tool, ToolContext,
    ToolError, ToolFuture,
};
use types::Clock;
use uuid::Uuid;

use crate::StoreMemory;

/// What an MCP server of the memory tells its client's model (the `instructions` of its
/// handshake).
pub const MEMORY_SERVER_INSTRUCTIONS: &str = "A trading agent's outcome memory (seed 003): \
    every directional signal it proposed, with the market snapshot at the decision and what the \
    price did after 1h, 4h and 24h, graded A-F. Recall tools answer as of now; \
    search_trade_memory searches graded signals' narratives and annotations; annotate attaches \
    a note to an outcome or a ledger trade.";

/// The name of the annotation tool.
pub const ANNOTATE: &str = "annotate";

/// The tools over `scope`'s memory in `store`: the six recall tools (as of `clock` at each
/// call) and, unless `read_only`, [`ANNOTATE`].
pub fn memory_tools<S>(
    store: S,
    scope: MemoryScope,
    clock: Arc<dyn Clock>,
    read_only: bool,
) -> Vec<Arc<dyn Tool>>
where
    S: OutcomeStore + LedgerStore + RegistryStore + Clone + Send + Sync + 'static,
{
    let memory = Arc::new(StoreMemory::new(store.clone(), scope));
    let mut out: Vec<Arc<dyn Tool>> = RECALL_TOOLS
        .iter()
        .map(|name| {
            Arc::new(RecallNow {
                name,
                memory: memory.clone(),
                clock: clock.clone(),
                // The tool as the model sees it: name, description, schema.
                shape: RecallTool::new(name, context(memory.clone(), clock.now()))
                    .map(|t| (t.description().to_owned(), t.parameters())),
            }) as Arc<dyn Tool>
        })
        .collect();
    if !read_only {
        out.push(Arc::new(Annotate {
            store,
            scope,
            clock,
        }));
    }
    out
}

fn context<S>(memory: Arc<StoreMemory<S>>, now: chrono::DateTime<chrono::Utc>) -> ToolContext
where
    S: OutcomeStore + Send + Sync + 'static,
{
    // The recall tools read the memory only; the market and the account are empty.
    let empty = Arc::new(Preloaded::new());
    ToolContext::new(now, RunMode::ReadOnly, Vec::new(), empty.clone(), empty)
        .with_trade_memory(memory)
}

/// A recall tool asked at the clock's time.
struct RecallNow<S> {
    name: &'static str,
    memory: Arc<StoreMemory<S>>,
    clock: Arc<dyn Clock>,
    shape: Option<(String, Arc<Value>)>,
}

impl<S> Tool for RecallNow<S>
where
    S: OutcomeStore + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        self.shape.as_ref().map_or("", |(d, _)| d)
    }

    fn parameters(&self) -> Arc<Value> {
        self.shape
            .as_ref()
            .map_or_else(|| Arc::new(json!({"type": "object"})), |(_, p)| p.clone())
    }

    fn call_async(&self, args: Value) -> ToolFuture<'_> {
        Box::pin(async move {
            let ctx = context(self.memory.clone(), self.clock.now());
            let tool = RecallTool::new(self.name, ctx).ok_or_else(|| ToolError::UnknownTool {
                name: self.name.to_owned(),
                available: RECALL_TOOLS.iter().map(|n| (*n).to_owned()).collect(),
            })?;
            tool.call_async(args).await
        })
    }
}

/// Arguments of `annotate`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnnotateArgs {
    /// The outcome to annotate: its id exactly as the recall tools list it (the short id, its
    /// first 8 hex digits) or the full UUID; hyphens optional. Give this or `trade_id`.
    #[serde(default)]
    #[schemars(length(min = 8, max = 36), regex(pattern = r"^[0-9A-Fa-f-]+$"))]
    pub outcome_id: Option<String>,
    /// The ledger row (closed or open trade) to annotate. Give this or `outcome_id`.
    #[serde(default)]
    pub trade_id: Option<Uuid>,
    /// The note, 1–2000 characters.
    #[schemars(length(min = 1, max = 2000))]
    pub text: String,
    /// Up to 16 tags of 1–40 characters.
    #[serde(default)]
    #[schemars(length(max = 16))]
    pub tags: Vec<String>,
}

/// Fewest hex digits an outcome id may be given with: a recall tool's short id.
const MIN_ID_DIGITS: usize = tools::SHORT_ID_CHARS;

/// Most full ids an ambiguous short id's error lists.
const AMBIGUOUS_LISTED: u32 = 5;

/// `annotate`: a note on an outcome or a ledger row of the scope.
struct Annotate<S> {
    store: S,
    scope: MemoryScope,
    clock: Arc<dyn Clock>,
}

fn spec() -> &'static ArgsSpec {
    static ARGS: OnceLock<ArgsSpec> = OnceLock::new();
    ARGS.get_or_init(ArgsSpec::of::<AnnotateArgs>)
}

fn data(e: &DbError) -> ToolError {
    ToolError::Data {
        tool: ANNOTATE.to_owned(),
        source: DataError::new("outcome memory", e.to_string()),
    }
}

fn invalid(problem: String) -> ToolError {
    ToolError::InvalidArguments {
        tool: ANNOTATE.to_owned(),
        problems: vec![problem],
    }
}

impl<S> Annotate<S>
where
    S: OutcomeStore + LedgerStore + RegistryStore + Send + Sync,
{
    /// Whether the deployment `d` is in the scope.
    async fn in_scope(&self, d: Uuid) -> Result<bool, ToolError> {
        Ok(match self.scope {
            MemoryScope::Deployment(id) => id == d,
            MemoryScope::User(user) => {
                self.store
                    .get_deployment(d)
                    .await
                    .map_err(|e| data(&e))?
                    .user_id
                    == user
            }
        })
    }

    /// The outcome `given` names: a full UUID, or a prefix of at least [`MIN_ID_DIGITS`] hex
    /// digits (the short id the recall tools list) that exactly one outcome of the scope has.
    async fn outcome_id(&self, given: &str) -> Result<Uuid, ToolError> {
        let digits = given.chars().filter(|c| *c != '-').count();
        if digits < MIN_ID_DIGITS || !given.chars().all(|c| c == '-' || c.is_ascii_hexdigit()) {
            return Err(invalid(format!(
                "outcome_id: {given:?} is neither an outcome id as the recall tools list it \
                 ({MIN_ID_DIGITS} hex digits) nor a full UUID"
            )));
        }
        if digits == 32 {
            return Uuid::parse_str(given)
                .map_err(|e| invalid(format!("outcome_id: {given:?}: {e}")));
        }
        let ids = self
            .store
            .outcome_ids_by_prefix(self.scope, given, AMBIGUOUS_LISTED + 1)
            .await
            .map_err(|e| match e {
                DbError::Invalid { .. } => invalid(format!("outcome_id: {e}")),
                other => data(&other),
            })?;
        match ids.as_slice() {
            [] => Err(invalid(format!(
                "outcome_id: no outcome {given} in this memory"
            ))),
            [id] => Ok(*id),
            [..] => {
                let mut listed: Vec<String> = ids
                    .iter()
                    .take(AMBIGUOUS_LISTED as usize)
                    .map(Uuid::to_string)
                    .collect();
                if ids.len() > AMBIGUOUS_LISTED as usize {
                    listed.push("…".into());
                }
                Err(invalid(format!(
                    "outcome_id: {given} is ambiguous, outcomes {} share it; pass the full id",
                    listed.join(", ")
                )))
            }
        }
    }

    async fn run(&self, args: Value) -> Result<Value, ToolError> {
        let a: AnnotateArgs = spec().parser.parse(ANNOTATE, args)?;
        let (target, deployment) = match (a.outcome_id, a.trade_id) {
            (Some(given), None) => {
                let id = self.outcome_id(&given).await?;
                let o = self.store.outcome(id).await;
                (AnnotationTarget::Outcome(id), o.map(|o| o.deployment_id))
            }
            (None, Some(id)) => {
                let t = self.store.get_trade(id).await;
                (AnnotationTarget::Trade(id), t.map(|t| t.deployment_id))
            }
            _ => {
                return Err(invalid(
                    "give exactly one of outcome_id and trade_id".into(),
                ));
            }
        };
        let missing = || {
            invalid(match target {
                AnnotationTarget::Outcome(id) => {
                    format!("outcome_id: no outcome {id} in this memory")
                }
                AnnotationTarget::Trade(id) => format!("trade_id: no trade {id} in this memory"),
            })
        };
        let deployment = match deployment {
            Ok(d) => d,
            Err(DbError::NotFound { .. }) => return Err(missing()),
            Err(e) => return Err(data(&e)),
        };
        // Another scope's row is reported exactly like a missing one.
        if !self.in_scope(deployment).await? {
            return Err(missing());
        }
        let stored = self
            .store
            .annotate(&NewAnnotation {
                id: Uuid::new_v4(),
                target,
                annotation: a.text,
                tags: a.tags,
                created_at: self.clock.now(),
            })
            .await
            .map_err(|e| match e {
                DbError::Bound { .. } | DbError::Invalid { .. } => invalid(e.to_string()),
                other => data(&other),
            })?;
        Ok(json!({
            "id": stored.id,
            "deployment_id": stored.deployment_id,
            "created_at": stored.created_at,
        }))
    }
}

impl<S> Tool for Annotate<S>
where
    S: OutcomeStore + LedgerStore + RegistryStore + Send + Sync,
{
    fn name(&self) -> &str {
        ANNOTATE
    }

    fn description(&self) -> &str {
        "Attach a note (and tags) to one of your outcomes or ledger trades, e.g. \"news-driven, \
         ignore the pattern\"; search_trade_memory finds it afterwards. Pass outcome_id exactly \
         as the recall tools list it (the 8-digit id) or as a full UUID."
    }

    fn parameters(&self) -> Arc<Value> {
        spec().schema.clone()
    }

    fn can_act(&self) -> bool {
        true
    }

    fn call_async(&self, args: Value) -> ToolFuture<'_> {
        Box::pin(self.run(args))
    }
}
