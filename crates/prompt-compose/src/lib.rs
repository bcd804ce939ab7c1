//! prompt-compose
