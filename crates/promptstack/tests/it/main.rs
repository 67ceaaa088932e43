//! The facade's integration tests: one binary, one module per area.

mod mcp;
mod tenant;
