//! Fuzz target bodies, shared by `fuzz/` (cargo-fuzz) and the fixed-seed smoke runs in `cargo test`.
//!
//! Each function takes arbitrary bytes, exercises one parser or transformer with bounded work, and
//! panics if a property that must hold for every input is violated. Not part of the stable API.

use crate::canonical_url::{canonicalize_url, url_key};
use crate::tools::label::{LabelConfig, render_label_with};
use crate::tools::naming::{is_valid_tool_name, namespace_mcp_tools};

/// Canonical URLs are idempotent, have no fragment, and [`url_key`] is idempotent too.
pub fn canonical_url(data: &[u8]) {
    let text = String::from_utf8_lossy(&data[..data.len().min(4096)]);
    if let Ok(once) = canonicalize_url(&text) {
        let twice = canonicalize_url(once.as_str()).expect("a canonical url must stay valid");
        assert_eq!(
            once, twice,
            "canonicalisation is not idempotent for {text:?}"
        );
        assert!(!once.as_str().contains('#'), "fragment kept in {once}");
    }
    let key = url_key(&text);
    assert_eq!(url_key(&key), key, "url_key is not idempotent for {text:?}");
}

/// Labels render without panicking, end with one ellipsis, and never cut a value twice.
pub fn tool_label(data: &[u8]) {
    let text = String::from_utf8_lossy(&data[..data.len().min(2048)]);
    let (verb, value) = text.split_once('\u{0}').unwrap_or((&text, ""));
    let max = 2 + usize::from(data.first().copied().unwrap_or(0) % 40);
    let input = serde_json::json!({ "q": value, "n": 7 });
    let label = render_label_with(
        verb,
        &input,
        &LabelConfig {
            max_value_chars: max,
        },
    );
    assert!(label.ends_with('…') || label.ends_with("..."), "{label:?}");
    if !verb.contains('…') && !verb.contains("..") && !value.contains('…') && !value.contains("..")
    {
        assert!(
            !label.contains("……") && !label.contains(".…"),
            "double ellipsis in {label:?}"
        );
    }
}

/// MCP namespacing is injective, provider-safe and independent of input order.
pub fn mcp_namespacing(data: &[u8]) {
    let text = String::from_utf8_lossy(&data[..data.len().min(2048)]);
    let mut parts = text.split('\u{0}');
    let taken: Vec<&str> = parts.next().unwrap_or("").split(',').collect();
    let pairs: Vec<(&str, &str)> = parts
        .take(64)
        .map(|p| p.split_once('\u{1}').unwrap_or((p, "")))
        .collect();
    let names = namespace_mcp_tools(pairs.iter().copied(), taken.iter().copied());
    let reversed = namespace_mcp_tools(pairs.iter().rev().copied(), taken.iter().rev().copied());
    assert_eq!(names, reversed, "names depend on input order");
    for (server, tool) in &pairs {
        let name = names.name_of(server, tool).expect("every pair is named");
        assert!(is_valid_tool_name(name), "invalid name {name:?}");
        assert!(!taken.contains(&name), "name {name:?} is taken");
        let origin = names.origin(name).expect("every name maps back");
        assert_eq!(
            (origin.server.as_str(), origin.tool.as_str()),
            (*server, *tool)
        );
    }
}
