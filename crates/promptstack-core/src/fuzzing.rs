//! Fuzz target bodies, shared by `fuzz/` (cargo-fuzz) and the fixed-seed smoke runs in `cargo test`.
//!
//! Each function takes arbitrary bytes, exercises one parser or transformer with bounded work, and
//! panics if a property that must hold for every input is violated. Not part of the stable API.

use crate::canonical_url::{canonicalize_url, url_key};
use crate::fence::attribute::{decode_attribute, encode_attribute, is_safe_byte};
use crate::fence::{
    ContentKind, Fence, FenceErrorKind, FixedNonce, MaxBytes, Nonce, Provenance, check, defang,
    find_all,
};
use crate::source::{Source, SourceSnapshot};
use crate::stream::{MAX_LOOKAHEAD, OutputMode, Processor, StreamConfig};
use crate::tools::label::{LabelConfig, render_label_with};
use crate::tools::naming::{is_valid_tool_name, namespace_mcp_tools};

/// The most input bytes a fence fuzz body looks at, so every run does bounded work.
const FENCE_MAX_INPUT: usize = 64 * 1024;

fn fence_text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(&data[..data.len().min(FENCE_MAX_INPUT)])
}

/// Wraps arbitrary content (the first byte picks a byte limit, 0 for none) and checks that the
/// result is exactly one valid fence: G1, G2, G3 through [`check`], and the body equal to the
/// defanged content when nothing was cut.
pub fn fence_wrap(data: &[u8]) {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let content = fence_text(rest);
    let nonce = Nonce::parse("f00dfacecafebeef").expect("a valid fixed nonce");
    let mut fence = Fence::new(FixedNonce::new(nonce.clone()));
    if limit != 0 {
        fence = fence.with_limit(MaxBytes(usize::from(limit) * 4));
    }
    let provenance = Provenance::tool_result("fuzz_tool").expect("a valid tool name");
    match fence.wrap(&content, &provenance) {
        Ok(wrapped) => {
            let report = check(&wrapped.text);
            assert!(report.is_valid(), "invalid fence: {:?}", report.problems);
            let info = report.fence.expect("a valid report has a header");
            assert_eq!(info.nonce, nonce);
            assert_eq!(info.kind, ContentKind::ToolResult);
            assert!(wrapped.text.ends_with(">>>"), "the closing marker is last");
            let body = &wrapped.text[info.body];
            if wrapped.truncated.is_none() {
                assert_eq!(body, defang(&content), "the body is the defanged content");
            } else {
                assert!(
                    body.len() <= usize::from(limit) * 4 || body.starts_with("\n[truncated"),
                    "the body exceeds its limit"
                );
            }
        }
        Err(error) => {
            assert_eq!(error.kind(), FenceErrorKind::NonceCollision, "{error}");
            assert!(
                content.to_ascii_lowercase().contains(nonce.as_str()),
                "a collision without the nonce in the content"
            );
        }
    }
}

/// Defangs arbitrary text: the output holds no finding, defanging again changes nothing (G4),
/// and text without findings comes back unchanged.
pub fn fence_defang(data: &[u8]) {
    let text = fence_text(data);
    let findings = find_all(&text);
    let once = defang(&text);
    assert!(
        find_all(&once).is_empty(),
        "defanged text still holds a finding"
    );
    assert_eq!(defang(&once), once, "defang is not idempotent");
    if findings.is_empty() {
        assert_eq!(once, text, "text without findings changed");
    }
}

/// Encodes arbitrary text as an attribute value and builds provenances from it: the encoding is
/// safe and decodes back exactly, and an accepted provenance writes a marker line that parses
/// back (G7).
pub fn fence_attribute(data: &[u8]) {
    let text = fence_text(&data[..data.len().min(1024)]);
    let encoded = encode_attribute(&text);
    assert!(
        encoded.bytes().all(|b| b == b'%' || is_safe_byte(b)),
        "unsafe byte in an encoded attribute"
    );
    assert_eq!(decode_attribute(&encoded).as_deref(), Some(text.as_ref()));
    let fence = Fence::new(FixedNonce::new(
        Nonce::parse("0123456789abcdef").expect("a valid fixed nonce"),
    ));
    for kind in ContentKind::ALL {
        let Ok(provenance) = Provenance::new(kind, Some(&text), Some(&text)) else {
            continue;
        };
        let Ok(wrapped) = fence.wrap("x", &provenance) else {
            continue;
        };
        assert_eq!(wrapped.text.lines().count(), 3, "the marker line broke");
        let report = check(&wrapped.text);
        assert!(report.is_valid(), "invalid fence: {:?}", report.problems);
    }
}

/// Sources 1, 2, 3 and 10, so that fuzzed numbers both resolve and miss.
fn stream_sources() -> SourceSnapshot {
    let sources = [1, 2, 3, 10]
        .into_iter()
        .map(|index| Source {
            index,
            url: format!("https://example.com/{index}"),
            title: Some(format!("Title {index}")),
        })
        .collect();
    SourceSnapshot { sources }
}

/// Feeds `input` to a processor in pieces ending at `cuts` (byte offsets, possibly inside a
/// character) and returns the output and the citation map.
fn stream_run(
    input: &[u8],
    cuts: &[usize],
    mode: OutputMode,
) -> (String, crate::stream::CitationMap) {
    let mut processor = Processor::new(&stream_sources(), StreamConfig { mode });
    let mut out = String::new();
    let mut from = 0;
    for &cut in cuts {
        let cut = cut.clamp(from, input.len());
        processor.push_bytes_into(&input[from..cut], &mut out);
        assert!(
            processor.held() <= MAX_LOOKAHEAD,
            "held {} bytes",
            processor.held()
        );
        from = cut;
    }
    processor.push_bytes_into(&input[from..], &mut out);
    processor.finish_into(&mut out);
    assert_eq!(processor.held(), 0, "finish left input behind");
    (out, processor.take_citations())
}

/// The stream processor is chunking-invariant: the input, split at offsets derived from its own
/// bytes (inside multi-byte characters included), gives the same output and citation map as the
/// whole input pushed at once, in both output modes.
pub fn stream_chunking(data: &[u8]) {
    let input = &data[..data.len().min(16 * 1024)];
    // A small generator seeded from the input chooses the cuts, so every input has its own split.
    let mut seed = input.iter().fold(0x9E37_79B9_7F4A_7C15u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3)
    });
    let mut cuts = Vec::new();
    let mut at = 0;
    while at < input.len() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        at += 1 + (seed % 24) as usize;
        cuts.push(at);
    }
    for mode in [OutputMode::Placeholders, OutputMode::Links] {
        let whole = stream_run(input, &[], mode);
        let split = stream_run(input, &cuts, mode);
        assert_eq!(
            split, whole,
            "split at {cuts:?} differs from the whole input"
        );
        if input.len() <= 256 {
            let every: Vec<usize> = (1..input.len()).collect();
            assert_eq!(
                stream_run(input, &every, mode),
                whole,
                "byte by byte differs"
            );
        }
    }
}

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
    use crate::layers::sites::{SitePattern, parse_url};
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
