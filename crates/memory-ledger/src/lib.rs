//! The closed-trade ledger: the materializer that turns broker-authoritative positions and fills
//! into `trade_history` rows, and the memory sections of the prompt. Pure logic.
