//! The core is pure: its dependency graph holds nothing that does IO, reads a clock for its own
//! use, or draws randomness that could reach an output. `clippy.toml` forbids the std calls; this
//! test guards the crates and features the core pulls in. The same holds for the two leaves it
//! re-exports (the fence and the stream processor), which also stay free of the template engine,
//! the schema validator and the tokenizer.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::{BTreeMap, BTreeSet};

#[path = "../../../../tests/support/cargo_tree.rs"]
mod cargo_tree;
// Also read by `module_graph` (the template layer's crate boundary).
pub(crate) use cargo_tree::cargo_tree;

/// The normal (non-dev) dependencies of `package` with their enabled features, resolved for that
/// package alone (so features other crates of the workspace turn on do not count).
fn dependencies(package: &str) -> BTreeMap<String, BTreeSet<String>> {
    let tree = cargo_tree(package, "none", "{p}|{f}", &[]);
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in tree.lines() {
        let (package, features) = line.split_once('|').unwrap();
        let name = package.split_whitespace().next().unwrap().to_owned();
        let features = features
            .trim_end_matches(" (*)")
            .split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_owned);
        deps.entry(name).or_default().extend(features);
    }
    deps
}

/// Who depends on `package` within the core's graph (direct dependents, by name).
fn dependents(package: &str) -> BTreeSet<String> {
    let tree = cargo_tree("promptstack-core", "depth", "{p}", &[]);
    // Lines are `<depth><name> v<version> …`; a line's parent is the nearest earlier line one level up.
    let mut stack: Vec<String> = Vec::new();
    let mut users = BTreeSet::new();
    for line in tree.lines() {
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        let depth: usize = line[..digits].parse().unwrap_or(0);
        let name = line[digits..]
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned();
        stack.truncate(depth);
        if name == package
            && let Some(parent) = stack.last()
        {
            users.insert(parent.clone());
        }
        stack.push(name);
    }
    users
}

/// The crates whose graphs must stay pure.
const PURE: &[&str] = &[
    "promptstack-core",
    "promptstack-fence",
    "promptstack-stream",
    "promptstack-template",
];

#[test]
fn no_io_clock_or_randomness_crates() {
    for package in PURE {
        let deps = dependencies(package);
        assert!(
            deps.contains_key(*package),
            "the dependency list was read: {deps:?}"
        );
        // Network, process, filesystem-walking, randomness and system-time-zone crates.
        const FORBIDDEN: &[&str] = &[
            "mio",
            "socket2",
            "hyper",
            "reqwest",
            "h2",
            "rustls",
            "native-tls",
            "openssl",
            "ureq",
            "curl",
            "rand",
            "rand_core",
            "rand_chacha",
            "fastrand",
            "walkdir",
            "notify",
            "tempfile",
            "dirs",
            "home",
            "iana-time-zone",
            "jiff-tzdb-platform",
            "rmcp",
            "signal-hook",
            "libloading",
        ];
        for name in FORBIDDEN {
            assert!(
                !deps.contains_key(*name),
                "{package} must not depend on {name}"
            );
        }
        // The async primitives the Turn uses, and nothing that reaches the OS.
        let tokio = deps.get("tokio").cloned().unwrap_or_default();
        assert!(
            tokio.iter().all(|f| f == "sync"),
            "tokio features in {package}: {tokio:?}"
        );
        // Civil time arithmetic only: no system clock or time-zone database lookups.
        let jiff = deps.get("jiff").cloned().unwrap_or_default();
        for feature in [
            "tz-system",
            "tzdb-zoneinfo",
            "tzdb-bundle-platform",
            "tzdb-concatenated",
        ] {
            assert!(
                !jiff.contains(feature),
                "jiff feature {feature} reads the system ({package})"
            );
        }
    }
}

/// The fence and the stream processor are usable alone: no template engine, schema validator,
/// tokenizer or async runtime comes with them.
#[test]
fn leaves_have_no_template_schema_or_tokenizer_dependency() {
    let core = dependencies("promptstack-core");
    for heavy in ["minijinja", "jsonschema", "bpe-openai"] {
        assert!(core.contains_key(heavy), "the core's list names {heavy}");
    }
    for package in ["promptstack-fence", "promptstack-stream"] {
        let deps = dependencies(package);
        assert!(deps.contains_key(package), "the dependency list was read");
        for name in [
            "promptstack-core",
            "minijinja",
            "jsonschema",
            "schemars",
            "bpe-openai",
            "bpe",
            "tokio",
        ] {
            assert!(
                !deps.contains_key(name),
                "{package} must not depend on {name}"
            );
        }
    }
}

/// `getrandom` is in the graph only to seed the hash maps of the JSON Schema validator against
/// collision attacks; it never reaches an output (diagnostics are sorted, maps are not iterated
/// into text). Anything else depending on it would be a new source of randomness.
#[test]
fn randomness_only_seeds_hash_maps() {
    if !dependencies("promptstack-core").contains_key("getrandom") {
        return;
    }
    let users = dependents("getrandom");
    assert!(!users.is_empty());
    for user in &users {
        assert_eq!(user, "ahash", "{user} depends on getrandom");
    }
}
