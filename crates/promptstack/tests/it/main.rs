//! The facade's integration tests: one binary, one module per area.

mod command;
#[cfg(feature = "eval")]
mod eval_http;
mod features;
mod limits;
#[cfg(all(feature = "mcp", feature = "tenant"))]
mod limits_doc;
#[cfg(feature = "mcp")]
mod mcp;
mod public_api;
#[cfg(feature = "tenant")]
mod tenant;
