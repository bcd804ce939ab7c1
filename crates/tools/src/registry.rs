//! The [`Tool`] trait, argument parsing against the tool's JSON Schema, the [`Registry`] and the
//! whitelist hydration [`build_tools`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::Value;
use skill_schema::{BUILTIN_TOOLS, ToolSpec};
use types::{JsonText, ProposedAction};

use crate::context::{RunMode, ToolContext};
use crate::error::ToolError;
use crate::recall::{self, Kind, RecallTool};
use crate::{derivatives, news, propose, risk};

/// What [`Tool::call_async`] returns: the call's result, once whatever it waits on answered.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, ToolError>> + Send + 'a>>;

/// What [`Tool::call_output`] returns.
pub type ToolOutputFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// What the model loop keeps of a tool call ([`Registry::call_output`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result's JSON text, as `serde_json` writes the tool's value (keys sorted): what the
    /// loop stores in the step and the model reads.
    pub result: JsonText,
    /// The proposal a `propose_order` call recorded ([`crate::proposal_from_result`] of its
    /// value); `None` for every other tool.
    pub proposal: Option<ProposedAction>,
}

impl ToolOutput {
    /// The output of the tool `name` whose result is `value`.
    #[must_use]
    pub fn of_value(name: &str, value: &Value) -> Self {
        Self {
            result: JsonText::from(value),
            proposal: recorded_proposal(name, value),
        }
    }
}

/// The proposal in `value` when it is a `propose_order` result.
fn recorded_proposal(name: &str, value: &Value) -> Option<ProposedAction> {
    if name == propose::NAME {
        propose::proposal_from_result(value)
    } else {
        None
    }
}

/// A tool the model may call.
///
/// A tool implements exactly one of [`Tool::call`] (it never waits: the built-ins over the
/// pre-loaded data sources of a [`ToolContext`], see [`crate::context`]) or
/// [`Tool::call_async`] (it waits on something outside the tick: the outcome memory's store, an
/// MCP server). The model loop always goes through [`Registry::call_async`], which serves both.
/// Arguments arrive as parsed JSON; the tick loop reports malformed JSON itself before any tool
/// sees it.
pub trait Tool: Send + Sync {
    /// The name the model calls it by (one of [`BUILTIN_TOOLS`] for built-ins).
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// JSON Schema (an object schema, subschemas inlined) of the arguments, shared: a tick offers
    /// it to the model without copying it.
    fn parameters(&self) -> Arc<Value>;

    /// Whether the tool acts on the world (records an order proposal). Read-only contexts refuse
    /// such tools.
    fn can_act(&self) -> bool {
        false
    }

    /// Runs a tool that never waits.
    ///
    /// The default refuses with [`ToolError::AsyncOnly`]: a tool that waits implements
    /// [`Tool::call_async`] instead.
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] when `args` break the schema or the tool's rules,
    /// [`ToolError::ReadOnly`] when the tool can act and the context is read-only,
    /// [`ToolError::Data`] when a data source fails.
    fn call(&self, args: Value) -> Result<Value, ToolError> {
        drop(args);
        Err(ToolError::AsyncOnly {
            tool: self.name().to_owned(),
        })
    }

    /// Runs the tool, awaiting what it waits on. The default runs [`Tool::call`].
    ///
    /// # Errors
    /// As [`Tool::call`], and [`ToolError::Data`] when what it waits on fails or times out.
    fn call_async(&self, args: Value) -> ToolFuture<'_> {
        Box::pin(std::future::ready(self.call(args)))
    }

    /// Runs the tool for the model loop: its result as JSON text and, for `propose_order`, the
    /// proposal it recorded. The default runs [`Tool::call_async`] and writes its value's text
    /// ([`ToolOutput::of_value`]). A tool may write the text directly, without a
    /// `serde_json::Value` tree (`propose_order` does), as long as it is the text of the value
    /// [`Tool::call_async`] returns.
    ///
    /// # Errors
    /// As [`Tool::call_async`].
    fn call_output(&self, args: Value) -> ToolOutputFuture<'_> {
        Box::pin(async move {
            let value = self.call_async(args).await?;
            Ok(ToolOutput::of_value(self.name(), &value))
        })
    }
}

/// The JSON Schema of `T` as tools publish it: draft 2020-12, every subschema inlined (providers
/// do not follow `$ref`), no `$schema` or `title` keys.
#[must_use]
pub fn args_schema<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let schema = generator.into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.remove("title");
        obj.remove("$schema");
        obj.remove("description");
    }
    tidy(&mut value);
    value
}

/// Makes a derived schema plain for providers: optional fields are simply not required (no
/// `null` in their type, no `"default": null`), no `format` hints, one-line descriptions.
fn tidy(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            obj.remove("format");
            if obj.get("default").is_some_and(Value::is_null) {
                obj.remove("default");
            }
            if let Some(Value::Array(types)) = obj.get("type") {
                let non_null: Vec<Value> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .cloned()
                    .collect();
                if non_null.len() == 1 {
                    obj.insert("type".to_owned(), non_null[0].clone());
                }
            }
            if let Some(Value::String(d)) = obj.get_mut("description") {
                *d = d.split_whitespace().collect::<Vec<_>>().join(" ");
            }
            for v in obj.values_mut() {
                tidy(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// A tool's argument schema and its compiled validator, built once per argument type for the
/// process (`OnceLock` in each tool): compiling a JSON Schema costs far more than a tick.
/// Public so that a tool catalog outside this crate (the chat coach's) parses its arguments
/// the same way.
pub struct ArgsSpec {
    /// The arguments' JSON Schema ([`args_schema`]), as offered to the model.
    pub schema: Arc<Value>,
    /// Its compiled validator.
    pub parser: ArgsParser,
}

impl ArgsSpec {
    /// The schema of `T` ([`args_schema`]) and its compiled validator.
    #[must_use]
    pub fn of<T: JsonSchema>() -> Self {
        let schema = args_schema::<T>();
        let parser = ArgsParser::new(&schema);
        Self {
            schema: Arc::new(schema),
            parser,
        }
    }
}

/// Parses a tool's arguments: first against its JSON Schema (every violation reported, with the
/// argument it is about), then into `T`.
pub struct ArgsParser {
    validator: Result<jsonschema::Validator, String>,
}

impl ArgsParser {
    /// Compiles `schema` (a broken schema is reported by every [`ArgsParser::parse`]).
    #[must_use]
    pub fn new(schema: &Value) -> Self {
        Self {
            validator: jsonschema::validator_for(schema).map_err(|e| e.to_string()),
        }
    }

    /// A `null` argument means "not given": models in strict modes send `null` for optional
    /// fields, so top-level nulls are dropped before validation.
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] listing every schema violation, or the deserialisation
    /// error.
    pub fn parse<T: DeserializeOwned>(&self, tool: &str, args: Value) -> Result<T, ToolError> {
        let args = match args {
            Value::Object(mut obj) => {
                obj.retain(|_, v| !v.is_null());
                Value::Object(obj)
            }
            other => other,
        };
        let validator = self.validator.as_ref().map_err(|e| {
            ToolError::invalid(
                tool,
                vec![format!("internal: the tool's schema is invalid: {e}")],
            )
        })?;
        // Valid arguments (the common case) skip collecting the error list.
        let mut problems: Vec<String> = if validator.is_valid(&args) {
            Vec::new()
        } else {
            validator
                .iter_errors(&args)
                .map(|e| {
                    let path = e
                        .instance_path()
                        .as_str()
                        .trim_start_matches('/')
                        .replace('/', ".");
                    if path.is_empty() {
                        format!("{e}")
                    } else {
                        format!("{path}: {e}")
                    }
                })
                .collect()
        };
        if !problems.is_empty() {
            problems.sort();
            problems.dedup();
            return Err(ToolError::invalid(tool, problems));
        }
        serde_json::from_value(args).map_err(|e| ToolError::invalid(tool, vec![e.to_string()]))
    }
}

/// The tools hydrated for one tick: the built-ins in the canonical order of [`BUILTIN_TOOLS`]
/// then the external tools by name (never the whitelist's order, so the tool list the model sees
/// is deterministic).
pub struct Registry {
    mode: RunMode,
    tools: Vec<Arc<dyn Tool>>,
    lens: Option<Arc<dyn crate::Lens>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("mode", &self.mode)
            .field("tools", &self.names())
            .finish()
    }
}

impl Registry {
    /// A registry of `tools` (in the given order) for `mode`: a tool catalog of its own (the chat
    /// coach's) behind the same dispatch path and read-only guard as the built-ins.
    #[must_use]
    pub fn new(mode: RunMode, tools: Vec<Arc<dyn Tool>>) -> Self {
        Self {
            mode,
            tools,
            lens: None,
        }
    }

    /// This registry with `lens` rewriting what its tools tell the model ([`Registry::show`],
    /// [`Registry::show_value`]); [`build_tools`] sets the context's ([`ToolContext::lens`]).
    #[must_use]
    pub fn with_lens(mut self, lens: Option<Arc<dyn crate::Lens>>) -> Self {
        self.lens = lens;
        self
    }

    /// `text` (a tool's error message) as the model reads it: through the lens, if any.
    #[must_use]
    pub fn show(&self, text: String) -> String {
        match &self.lens {
            Some(lens) => lens.show(&text),
            None => text,
        }
    }

    /// A tool's result as the model reads it: every string in it through the lens, if any
    /// (numbers, keys and the document's shape are kept).
    #[must_use]
    pub fn show_value(&self, value: Value) -> Value {
        match &self.lens {
            Some(lens) => crate::map_json_strings(value, &|s| lens.show(s)),
            None => value,
        }
    }

    /// The registered tool names, in order.
    #[must_use]
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// The registered tools, in order.
    #[must_use]
    pub fn tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// The tool named `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The run mode the tools were hydrated for.
    #[must_use]
    pub const fn mode(&self) -> RunMode {
        self.mode
    }

    /// Calls the tool `name`. This is the one dispatch path: it refuses tools that can act when
    /// the context is read-only, before the tool runs.
    ///
    /// # Errors
    /// [`ToolError::UnknownTool`] when no such tool is registered, [`ToolError::ReadOnly`] for
    /// an acting tool in a read-only context, and whatever the tool returns.
    pub fn call(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.checked(name)?.call(args)
    }

    /// Calls the tool `name`, awaiting it if it waits ([`Tool::call_async`]): the model loop's
    /// dispatch path, with the same refusals as [`Registry::call`].
    ///
    /// # Errors
    /// As [`Registry::call`].
    pub async fn call_async(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.checked(name)?.call_async(args).await
    }

    /// Calls the tool `name` for the model loop ([`Tool::call_output`]): its result's text as
    /// the model reads it (through the lens, if any: then from the tool's value) and the
    /// proposal it recorded, with the same refusals as [`Registry::call`].
    ///
    /// # Errors
    /// As [`Registry::call`].
    pub async fn call_output(&self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let tool = self.checked(name)?;
        if self.lens.is_none() {
            return tool.call_output(args).await;
        }
        let value = tool.call_async(args).await?;
        let proposal = recorded_proposal(name, &value);
        Ok(ToolOutput {
            result: JsonText::from(&self.show_value(value)),
            proposal,
        })
    }

    /// The tool `name`, if it is registered and may run in this registry's mode.
    fn checked(&self, name: &str) -> Result<&Arc<dyn Tool>, ToolError> {
        let tool = self.get(name).ok_or_else(|| ToolError::UnknownTool {
            name: name.to_owned(),
            available: self.names().iter().map(|n| (*n).to_owned()).collect(),
        })?;
        if tool.can_act() && self.mode == RunMode::ReadOnly {
            return Err(ToolError::ReadOnly {
                tool: name.to_owned(),
            });
        }
        Ok(tool)
    }
}

type Factory = fn(&ToolContext) -> Arc<dyn Tool>;

/// Every built-in, in the order of [`BUILTIN_TOOLS`].
const FACTORIES: [(&str, Factory); 11] = [
    (propose::NAME, |ctx| {
        Arc::new(propose::ProposeOrder::new(ctx.clone()))
    }),
    (news::NAME, |ctx| {
        Arc::new(news::FetchNewsSentiment::new(ctx.clone()))
    }),
    (risk::NAME, |ctx| {
        Arc::new(risk::GetPositionRisk::new(ctx.clone()))
    }),
    (derivatives::FUNDING_NAME, |ctx| {
        Arc::new(derivatives::GetFundingRate::new(ctx.clone()))
    }),
    (derivatives::OI_NAME, |ctx| {
        Arc::new(derivatives::GetOpenInterest::new(ctx.clone()))
    }),
    (recall::SYMBOL_HISTORY, |ctx| {
        Arc::new(RecallTool::of(Kind::SymbolHistory, ctx.clone()))
    }),
    (recall::RECENT_TRADES, |ctx| {
        Arc::new(RecallTool::of(Kind::RecentTrades, ctx.clone()))
    }),
    (recall::SIGNAL_ACCURACY, |ctx| {
        Arc::new(RecallTool::of(Kind::SignalAccuracy, ctx.clone()))
    }),
    (recall::SIMILAR_SETUPS, |ctx| {
        Arc::new(RecallTool::of(Kind::SimilarSetups, ctx.clone()))
    }),
    (recall::WHAT_WORKED, |ctx| {
        Arc::new(RecallTool::of(Kind::WhatWorked, ctx.clone()))
    }),
    (recall::SEARCH, |ctx| {
        Arc::new(RecallTool::of(Kind::Search, ctx.clone()))
    }),
];

/// The names of every built-in this crate implements, in canonical order.
#[must_use]
pub fn builtin_names() -> Vec<&'static str> {
    FACTORIES.iter().map(|(name, _)| *name).collect()
}

/// The prefix of the names an MCP server's tools are offered under: `mcp__{server}__`. The `mcp`
/// crate names its tools `mcp__{server}__{tool}`; [`build_tools`] uses the prefix to check that a
/// skill's servers were started.
#[must_use]
pub fn mcp_tool_prefix(server: &str) -> String {
    format!("mcp__{server}__")
}

/// Hydrates the whitelisted built-ins with `ctx`, then appends the context's external tools
/// ([`ToolContext::external`]), sorted by name.
///
/// Only whitelisted built-ins are built; duplicates in the whitelist collapse; the registry lists
/// the built-ins in [`BUILTIN_TOOLS`] order whatever the whitelist's order, then the external
/// tools by name, so the tool list the model sees is deterministic.
///
/// # Errors
/// [`ToolError::NotABuiltin`] for a whitelisted name that is no built-in (with its index),
/// [`ToolError::McpNotStarted`] when the spec names an MCP server none of whose tools
/// (`mcp__{server}__*`) are in the context — its servers were not started, and silently dropping
/// tools a strategy relies on would be worse than refusing —, and [`ToolError::NameClash`] when
/// an external tool has the name of a built-in or of another external tool.
pub fn build_tools(whitelist: &ToolSpec, ctx: &ToolContext) -> Result<Registry, ToolError> {
    for (index, name) in whitelist.built_in.iter().enumerate() {
        if !BUILTIN_TOOLS.contains(&name.as_str()) || !FACTORIES.iter().any(|(n, _)| n == name) {
            return Err(ToolError::NotABuiltin {
                index,
                name: name.clone(),
            });
        }
    }
    for (index, server) in whitelist.mcp_servers.iter().enumerate() {
        let prefix = mcp_tool_prefix(&server.name);
        if !ctx.external.iter().any(|t| t.name().starts_with(&prefix)) {
            return Err(ToolError::McpNotStarted {
                index,
                name: server.name.clone(),
            });
        }
    }
    let mut tools: Vec<Arc<dyn Tool>> = FACTORIES
        .iter()
        .filter(|(name, _)| whitelist.built_in.iter().any(|w| w == name))
        .map(|(_, factory)| factory(ctx))
        .collect();
    // Every built-in (whitelisted or not) keeps its name: a started tool may not shadow one.
    let mut external: Vec<(usize, &Arc<dyn Tool>)> = ctx.external.iter().enumerate().collect();
    external.sort_by(|a, b| a.1.name().cmp(b.1.name()).then(a.0.cmp(&b.0)));
    for pair in external.windows(2) {
        if pair[0].1.name() == pair[1].1.name() {
            return Err(ToolError::NameClash {
                name: pair[0].1.name().to_owned(),
                first: format!("external tool {}", pair[0].0),
                second: format!("external tool {}", pair[1].0),
            });
        }
    }
    for (index, tool) in external {
        if BUILTIN_TOOLS.contains(&tool.name()) {
            return Err(ToolError::NameClash {
                name: tool.name().to_owned(),
                first: "the built-in".to_owned(),
                second: format!("external tool {index}"),
            });
        }
        tools.push(tool.clone());
    }
    Ok(Registry {
        mode: ctx.mode,
        tools,
        lens: ctx.lens.clone(),
    })
}
