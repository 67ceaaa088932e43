//! The facade's integration tests: one binary, one module per area.

mod features;
mod limits;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "tenant")]
mod tenant;
