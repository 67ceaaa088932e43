//! The stream processor's integration tests: data-driven cases, chunking invariance, code
//! preservation and the fuzz smoke run.

mod stream;
