//! One tick of the trading agent: assemble the context, run the model loop with tools, extract
//! the proposed action, report usage and cost. Pure: no database, no exchange, no wall clock.
