//! Tools the trading agent may call: the `Tool` trait, the registry of built-ins and the
//! whitelist hydration `build_tools(whitelist, ctx)`. Tools read through the data-source traits of
//! a `ToolContext`; they never reach a database or an exchange themselves.
