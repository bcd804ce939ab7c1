//! The execution engine: the only authority on what trades. It validates a proposed action
//! against the deployer's risk caps and answers with a [`types::Verdict`]; the paper broker fills
//! what the engine lets through.
