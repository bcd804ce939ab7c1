//! Storage: store traits with one PostgreSQL and one SQLite implementation each, and the
//! migrations for both.
