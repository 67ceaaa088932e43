//! Fuzz target bodies, shared by `fuzz/` (cargo-fuzz) and the fixed-seed smoke runs in `cargo test`.
//!
//! Each function takes arbitrary bytes, exercises one parser or transformer with bounded work, and
//! panics if a property that must hold for every input is violated. Only with the `fuzzing`
//! feature; not part of the stable API. The fence's and the stream processor's bodies live in
//! their own crates (`promptstack_fence::fuzzing`, `promptstack_stream::fuzzing`).

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

/// The most input bytes a spec fuzz body looks at.
const SPEC_MAX_INPUT: usize = 64 * 1024;

/// Loads arbitrary bytes as an agent spec (the first byte picks TOML or JSON) and, when it
/// compiles, assembles and composes every target for a fixed send. Nothing may panic: every
/// failure must come back as a located error or an assembly error; and the assembly must be
/// deterministic and reuse-safe (fresh and cached results agree).
pub fn spec_load(data: &[u8]) {
    use crate::{Agent, SendContext, SpecFormat};
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let rest = &rest[..rest.len().min(SPEC_MAX_INPUT)];
    let (format, name) = if selector % 2 == 0 {
        (SpecFormat::Toml, "fuzz.toml")
    } else {
        (SpecFormat::Json, "fuzz.json")
    };
    let agent = match Agent::from_source(rest, name, format) {
        Ok(agent) => agent,
        Err(error) => {
            assert!(
                !error.diagnostics.is_empty(),
                "an error must carry at least one diagnostic"
            );
            // Rendering the report must not panic either.
            let _ = error.to_string();
            return;
        }
    };
    let send = br#"{"now": "2026-11-30T09:15:00+01:00",
        "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"},
        "user": {"name": "Ada", "location": {"latitude": 0, "longitude": 0}},
        "user_message": "/research tides"}"#;
    let ctx = SendContext::from_json(send, "send.json").expect("the fixed send is valid");
    let first = agent.assemble(&ctx);
    let fresh = agent.assemble_fresh(&ctx);
    match (first, fresh) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.stable(), b.stable());
            assert_eq!(a.fingerprint(), b.fingerprint());
            for target in agent.target_ids() {
                let (ca, cb) = (a.compose(target), b.compose(target));
                match (ca, cb) {
                    (Ok(ca), Ok(cb)) => assert_eq!(ca, cb),
                    (Err(_), Err(_)) => {}
                    _ => panic!("cached and fresh compositions disagree for target {target}"),
                }
            }
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!(
            "cached and fresh assembly disagree: {:?} vs {:?}",
            a.is_ok(),
            b.is_ok()
        ),
    }
}

/// Parses arbitrary bytes as a send context: every failure is a located error, never a panic.
pub fn send_load(data: &[u8]) {
    let data = &data[..data.len().min(SPEC_MAX_INPUT)];
    if let Err(error) = crate::SendContext::from_json(data, "fuzz.json") {
        assert!(!error.diagnostics.is_empty());
        let _ = error.to_string();
    }
}

/// Site patterns and URLs: the first byte splits the rest into a pattern and a URL. Parsing and
/// matching never panic; a parsed pattern matches the URL the same way twice, and the wildcard
/// `*` matches every http(s) URL with a host.
pub fn site_pattern(data: &[u8]) {
    use crate::sites::{SitePattern, parse_url};
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let rest = &rest[..rest.len().min(4096)];
    let at = usize::from(split).min(rest.len());
    let pattern = String::from_utf8_lossy(&rest[..at]);
    let url = String::from_utf8_lossy(&rest[at..]);
    let parsed = SitePattern::parse(&pattern);
    if let Err(error) = &parsed {
        assert!(!error.to_string().is_empty());
    }
    if let Ok(url) = parse_url(&url) {
        if let Ok(pattern) = &parsed {
            assert_eq!(pattern.matches(&url), pattern.matches(&url));
        }
        let any = SitePattern::parse("*").expect("`*` is a pattern");
        let web = matches!(url.scheme(), "http" | "https") && url.host().is_some();
        assert_eq!(any.matches(&url), web, "`*` and {url}");
    }
}

/// Parses arbitrary bytes as a provider caching-rules table: a failure is an error with a message,
/// never a panic; a table that loads answers lookups and TTL questions for any model name.
pub fn provider_rules(data: &[u8]) {
    use crate::provider::{Family, Rules};
    let text = String::from_utf8_lossy(&data[..data.len().min(SPEC_MAX_INPUT)]);
    match Rules::from_toml(&text, "fuzz.toml") {
        Ok(rules) => {
            let from_input: String = text.chars().take(40).collect();
            for family in [Family::Anthropic, Family::Openai, Family::Gemini] {
                for model in [
                    "",
                    "claude-sonnet-4-5",
                    "gpt-5",
                    "gemini-2.5-pro",
                    &from_input,
                ] {
                    if let Ok(rule) = rules.find(family, model) {
                        assert!(rule.matches(family, model));
                        let _ = rule.ttl_for_gap(Some(60));
                        let _ = rule.shortest_ttl();
                    }
                }
            }
        }
        Err(error) => assert!(!error.to_string().is_empty()),
    }
}

/// Parses arbitrary bytes as a prior conversation: a failure is an error with a message, never a
/// panic; a conversation that loads is consistent and serialises back to a conversation that
/// loads the same.
pub fn conversation_load(data: &[u8]) {
    use crate::provider::Conversation;
    let data = &data[..data.len().min(SPEC_MAX_INPUT)];
    match Conversation::from_json(data, "fuzz.json") {
        Ok(conversation) => {
            let _ = conversation.continues_tool_turn();
            let bytes =
                serde_json::to_vec(&conversation).expect("a loaded conversation serialises");
            let again = Conversation::from_json(&bytes, "again.json")
                .expect("a serialised conversation loads again");
            assert_eq!(again, conversation);
        }
        Err(error) => assert!(!error.to_string().is_empty()),
    }
}
