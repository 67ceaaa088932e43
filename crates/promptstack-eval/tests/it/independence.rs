//! The eval crate stands apart from the service: its dependency graph holds neither the server,
//! the store, the command line nor any network or runtime crate, so the statistics and reports
//! can be used (and later extended) without them.

#[path = "../../../../tests/support/cargo_tree.rs"]
mod cargo_tree;
use cargo_tree::cargo_tree;

/// The names of the normal (non-dev) dependencies of this crate, resolved for it alone.
fn dependencies() -> Vec<String> {
    cargo_tree("promptstack-eval", "none", "{p}", &[])
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_eval_crate_depends_on_no_server_store_or_network_crate() {
    let dependencies = dependencies();
    assert!(
        dependencies.iter().any(|d| d == "statrs"),
        "{dependencies:?}"
    );
    for forbidden in [
        "promptstack",
        "promptstack-server",
        "promptstack-store",
        "promptstack-cli",
        "axum",
        "hyper",
        "reqwest",
        "sqlx",
        "rmcp",
        "mio",
        "nalgebra",
    ] {
        assert!(
            !dependencies.iter().any(|d| d == forbidden),
            "promptstack-eval depends on {forbidden}"
        );
    }
}
