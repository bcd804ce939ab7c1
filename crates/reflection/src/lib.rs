//! Reflection: when lessons are due, the reflection prompt and job, and the bounds every lesson
//! obeys.
