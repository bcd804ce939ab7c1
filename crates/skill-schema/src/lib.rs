//! skill-schema
