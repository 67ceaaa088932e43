//! Tool names: the provider charset, MCP namespacing and merging.

use promptstack_core::tools::mcp::{
    McpFailure, McpFailureStage, McpServerListing, McpServerStatus, McpTool, merge_mcp_tools,
};
use promptstack_core::tools::naming::{
    ToolNameErrorKind, is_valid_tool_name, namespace_mcp_tools, validate_tool_name,
};
use proptest::prelude::*;

#[test]
fn the_charset_is_enforced() {
    assert!(validate_tool_name("web_search-2").is_ok());
    assert!(validate_tool_name(&"a".repeat(64)).is_ok());
    let kind = |name: &str| validate_tool_name(name).unwrap_err().kind().clone();
    assert_eq!(kind(""), ToolNameErrorKind::Empty);
    assert_eq!(
        kind(&"a".repeat(65)),
        ToolNameErrorKind::TooLong { len: 65 }
    );
    assert_eq!(
        kind("web.search"),
        ToolNameErrorKind::InvalidCharacter {
            character: '.',
            offset: 3
        }
    );
    assert_eq!(
        kind("café"),
        ToolNameErrorKind::InvalidCharacter {
            character: 'é',
            offset: 3
        }
    );
    assert_eq!(
        validate_tool_name("a b").unwrap_err().to_string(),
        "tool name `a b` holds ' ' at byte 1; only ASCII letters, digits, `_` and `-` are accepted"
    );
}

#[test]
fn shared_tool_names_stay_apart_and_collisions_get_suffixes() {
    let names = namespace_mcp_tools(
        [
            ("github", "create_issue"),
            ("gitlab", "create_issue"),
            ("my.srv", "x"),
            ("my srv", "x"),
        ],
        ["github_search"],
    );
    assert_eq!(
        names.name_of("github", "create_issue"),
        Some("github_create_issue")
    );
    assert_eq!(
        names.name_of("gitlab", "create_issue"),
        Some("gitlab_create_issue")
    );
    let a = names.name_of("my.srv", "x").unwrap();
    let b = names.name_of("my srv", "x").unwrap();
    assert_ne!(a, b);
    // Neither colliding pair keeps the plain name: which came first must not matter.
    assert!(a.starts_with("my_srv_x_") && b.starts_with("my_srv_x_"));
    assert_eq!(names.origin(a).unwrap().server, "my.srv");
}

fn pairs_strategy() -> impl Strategy<Value = (Vec<(String, String)>, Vec<String>)> {
    // A tiny alphabet with characters that sanitise alike, so collisions are frequent.
    let server = prop_oneof!["[ab._ é]{0,3}", "[ab]{60,70}"];
    let tool = prop_oneof!["[xy._-]{0,3}", "[xy]{30,70}"];
    let pairs = prop::collection::vec((server, tool), 0..24);
    let taken = prop::collection::vec("[ab_xy]{1,5}", 0..6);
    (pairs, taken)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn namespacing_is_injective_safe_and_order_independent(
        (pairs, taken) in pairs_strategy(),
        seed in any::<u64>(),
    ) {
        let names = namespace_mcp_tools(
            pairs.iter().map(|(s, t)| (s.as_str(), t.as_str())),
            taken.iter().map(String::as_str),
        );
        let mut shuffled = pairs.clone();
        shuffle(&mut shuffled, seed);
        let mut taken_shuffled = taken.clone();
        shuffle(&mut taken_shuffled, seed.rotate_left(17));
        let again = namespace_mcp_tools(
            shuffled.iter().map(|(s, t)| (s.as_str(), t.as_str())),
            taken_shuffled.iter().map(String::as_str),
        );
        prop_assert_eq!(&names, &again);

        let mut seen = std::collections::BTreeSet::new();
        for (server, tool) in &pairs {
            let name = names.name_of(server, tool).unwrap();
            prop_assert!(is_valid_tool_name(name), "{:?}", name);
            prop_assert!(!taken.iter().any(|t| t == name));
            let origin = names.origin(name).unwrap();
            prop_assert_eq!((&origin.server, &origin.tool), (server, tool));
            seen.insert(name.to_owned());
        }
        let distinct: std::collections::BTreeSet<_> = pairs.iter().collect();
        prop_assert_eq!(seen.len(), distinct.len());
        prop_assert_eq!(names.len(), distinct.len());
    }
}

/// A deterministic Fisher–Yates shuffle driven by a splitmix64 sequence.
pub(crate) fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        items.swap(i, (z % (i as u64 + 1)) as usize);
    }
}

fn tool(name: &str) -> McpTool {
    McpTool {
        name: name.to_owned(),
        description: Some(format!("{name} things")),
        input_schema: std::sync::Arc::new(serde_json::json!({"type": "object"})),
    }
}

#[test]
fn merging_skips_failed_servers_and_orders_canonically() {
    let listings = vec![
        McpServerListing {
            server: "zeta".into(),
            title: None,
            status: McpServerStatus::Ready {
                tools: vec![tool("b"), tool("a")],
            },
        },
        McpServerListing {
            server: "down".into(),
            title: None,
            status: McpServerStatus::Failed {
                failure: McpFailure {
                    stage: McpFailureStage::Connect,
                    timed_out: true,
                    message: "initialisation timed out after 5s".into(),
                },
            },
        },
        McpServerListing {
            server: "alpha".into(),
            title: None,
            status: McpServerStatus::Ready {
                tools: vec![tool("b")],
            },
        },
    ];
    let merged = merge_mcp_tools(&listings, ["alpha_b"]);
    let names: Vec<&str> = merged.tools().map(|t| t.name).collect();
    assert_eq!(names.len(), 3);
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "not sorted: {names:?}"
    );
    assert!(names.contains(&"zeta_a") && names.contains(&"zeta_b"));
    assert!(names.iter().any(|n| n.starts_with("alpha_b_")), "{names:?}");
    assert_eq!(merged.skipped.len(), 1);
    assert_eq!(merged.skipped[0].server, "down");

    let zeta_a = merged.tools().find(|t| t.name == "zeta_a").unwrap();
    assert_eq!(zeta_a.tool.description.as_deref(), Some("a things"));
    assert_eq!(zeta_a.origin.server, "zeta");

    let mut reordered = listings.clone();
    reordered.reverse();
    if let McpServerStatus::Ready { tools } = &mut reordered[2].status {
        tools.reverse();
    }
    assert_eq!(merge_mcp_tools(&reordered, ["alpha_b"]), merged);

    let json = serde_json::to_value(&listings[1]).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"server": "down", "status": "failed", "failure": {
            "stage": "connect", "timed_out": true, "message": "initialisation timed out after 5s"}})
    );
}

#[test]
fn fuzz_smoke() {
    // Bytes drawn from a small alphabet (separators, look-alike characters) so that collisions
    // are frequent; a fixed seed keeps the run reproducible.
    const ALPHABET: &[u8] = b"\x00\x01\x00\x01aab._- \xc3\xa9,";
    let mut state = 0x5EED_u64;
    for round in 0..3000 {
        let len = 1 + round % 300;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let z = (state ^ (state >> 31)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                if z.is_multiple_of(7) {
                    (z >> 8) as u8
                } else {
                    ALPHABET[(z >> 16) as usize % ALPHABET.len()]
                }
            })
            .collect();
        promptstack_core::fuzzing::mcp_namespacing(&bytes);
    }
}
