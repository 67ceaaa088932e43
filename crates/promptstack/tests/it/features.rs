//! The facade's features: without `mcp`, `tenant` and `eval`, neither the MCP client nor an HTTP stack
//! (nor an async runtime beyond the core's sync primitives) is in the graph; the OpenAPI schema
//! derive comes only with `schema`.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;

#[path = "../../../../tests/support/cargo_tree.rs"]
mod cargo_tree;
use cargo_tree::cargo_tree;

/// The names of the packages in the facade's normal dependency graph with `features`.
fn graph(features: &[&str]) -> BTreeSet<String> {
    cargo_tree("promptstack", "none", "{p}", features)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn without_default_features_there_is_no_mcp_client_or_http_stack() {
    let lean = graph(&["--no-default-features"]);
    assert!(
        lean.contains("promptstack-core"),
        "the graph was read: {lean:?}"
    );
    for name in [
        "rmcp",
        "reqwest",
        "hyper",
        "http",
        "futures",
        "utoipa",
        "promptstack-eval",
    ] {
        assert!(!lean.contains(name), "{name} without default features");
    }
    let full = graph(&[]);
    for name in ["rmcp", "reqwest", "promptstack-eval"] {
        assert!(full.contains(name), "{name} with default features");
    }
    let eval = graph(&["--no-default-features", "--features", "eval"]);
    for name in ["promptstack-eval", "reqwest"] {
        assert!(eval.contains(name), "{name} with `eval`");
    }
    assert!(!eval.contains("rmcp"), "rmcp with `eval` alone");
    assert!(!full.contains("utoipa"), "utoipa with default features");
    let schema = graph(&["--no-default-features", "--features", "schema"]);
    assert!(schema.contains("utoipa"), "utoipa with `schema`");
    for name in ["rmcp", "reqwest", "hyper", "futures"] {
        assert!(!schema.contains(name), "{name} with `schema` alone");
    }
}
