//! One module per subcommand: each has an `Args` struct and a `run` function.

pub mod bench;
pub mod cache_sim;
pub mod capabilities;
pub mod cite;
pub mod diff;
pub mod eval;
pub mod explain;
pub mod fence;
pub mod keys;
pub mod lint;
pub mod mcp_args;
pub mod render;
pub mod request;
pub mod schema;
pub mod serve;
pub mod tools;

/// The model line of the human-readable reports: `Name (provider/id, tools: native|none)`.
fn model_summary(model: &promptstack::context::ModelDescriptor) -> String {
    format!(
        "{} ({}/{}, tools: {})",
        model.name,
        model.provider,
        model.id,
        if model.can_use_tools() {
            "native"
        } else {
            "none"
        }
    )
}
