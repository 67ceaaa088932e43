//! The facade's integration tests: one binary, one module per area.

mod limits;
mod mcp;
mod tenant;
