//! The agent-family layers: properties of guidelines, escaping, context files and compact state;
//! site matching cases (ports, subdomains, IDNs, malformed input); a hidden skill never reaching
//! any example's output; and a fixed-seed smoke run of the site-pattern fuzz body.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use promptstack_core::context::ContextFile;
use promptstack_core::layers::compact::{Bounds, compact};
use promptstack_core::layers::escape::{escape_xml, escape_xml_into, escaped_len, unescape_xml};
use promptstack_core::layers::files::{Caps, prepare};
use promptstack_core::layers::guidelines::{normalize, trim};
use promptstack_core::sites::{SitePattern, parse_url};
use promptstack_core::{Agent, SendContext, SpecFormat};
use proptest::prelude::*;

fn guideline() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ \t\n]{0,2}(Be brief|Run tests|Cite files|be brief)[ \t\n\u{a0}\u{feff}\u{3000}\u{85}]{0,2}",
        "[ \t\u{2028}]{0,3}",
        "[a-c \n]{0,6}",
    ]
}

proptest! {
    #[test]
    fn guidelines_are_idempotent_and_keep_first_positions(list in proptest::collection::vec(guideline(), 0..12)) {
        let once = normalize(&list);
        prop_assert_eq!(normalize(&once), once.clone());
        // The output is the trimmed non-empty inputs, each at its first position, in order.
        let mut expected: Vec<String> = Vec::new();
        for item in &list {
            let t = trim(item);
            if !t.is_empty() && !expected.iter().any(|e| e == t) {
                expected.push(t.to_owned());
            }
        }
        prop_assert_eq!(&once, &expected);
        for item in &once {
            prop_assert_eq!(trim(item), item.as_str());
        }
    }

    #[test]
    fn escaping_round_trips_and_leaves_no_markup(text in any::<String>(), before in "[a-z<&]{0,4}") {
        let escaped = escape_xml(&text);
        prop_assert_eq!(unescape_xml(&escaped), text.clone());
        prop_assert_eq!(escaped.len(), escaped_len(&text));
        // Appending escapes exactly as `escape_xml` does, after what was there.
        let mut appended = before.clone();
        escape_xml_into(&text, &mut appended);
        prop_assert_eq!(appended, format!("{before}{escaped}"));
        prop_assert!(!escaped.contains(['<', '>', '"', '\'']));
        for (i, _) in escaped.match_indices('&') {
            let rest = &escaped[i..];
            prop_assert!(["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].iter().any(|e| rest.starts_with(e)));
        }
    }

    #[test]
    fn context_files_respect_their_caps(
        sizes in proptest::collection::vec(0usize..300, 0..6),
        max_file in 1usize..200,
        max_total in 0usize..500,
    ) {
        let files: Vec<ContextFile> = sizes.iter().enumerate().map(|(i, n)| ContextFile {
            path: format!("C:\\repo\\d{i}\\AGENTS.md"),
            content: "é".repeat(*n / 2) + &"x".repeat(n % 2),
        }).collect();
        let shown = prepare(&files, Some("C:\\repo"), Caps { max_file_bytes: max_file, max_total_bytes: max_total });
        let total: usize = shown.iter().map(|f| f.content.len()).sum();
        prop_assert!(total <= max_total);
        for (file, original) in shown.iter().zip(&files) {
            prop_assert!(file.content.len() <= max_file);
            prop_assert!(original.content.starts_with(&file.content));
            prop_assert_eq!(file.truncated, file.content.len() < original.content.len());
            prop_assert_eq!(file.note.is_some(), file.truncated);
            prop_assert!(!file.path.contains('\\'));
            prop_assert!(file.path.ends_with("/AGENTS.md"));
        }
    }

    #[test]
    fn compact_output_is_bounded_json(value in json_value(), items in 0usize..5, chars in 1usize..20) {
        let text = compact(&value, Bounds { max_items: items, max_chars: chars, max_depth: 3 });
        let parsed: serde_json::Value = serde_json::from_str(&text).expect("compact output is JSON");
        prop_assert!(!text.contains('\n'));
        fn check(v: &serde_json::Value, items: usize, chars: usize) -> Result<(), TestCaseError> {
            match v {
                serde_json::Value::String(s) => prop_assert!(s.chars().count() <= chars.max(9)),
                serde_json::Value::Array(a) => { prop_assert!(a.len() <= items + 1); for x in a { check(x, items, chars)?; } }
                serde_json::Value::Object(m) => { prop_assert!(m.len() <= items + 1); for x in m.values() { check(x, items, chars)?; } }
                _ => {}
            }
            Ok(())
        }
        check(&parsed, items, chars)?;
    }

    #[test]
    fn site_parsing_never_panics(pattern in any::<String>(), url in any::<String>()) {
        if let (Ok(p), Ok(u)) = (SitePattern::parse(&pattern), parse_url(&url)) {
            let _ = p.matches(&u);
        }
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i32>().prop_map(|n| serde_json::json!(n)),
        "[a-zé\"\\\\ ]{0,30}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..7).prop_map(serde_json::Value::Array),
            proptest::collection::btree_map("[a-z]{1,4}", inner, 0..7)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

#[test]
fn site_matching_cases() {
    let cases: &[(&str, &str, bool)] = &[
        // Subdomains.
        ("*.example.com", "https://example.com/", true),
        ("*.example.com", "https://docs.example.com/a", true),
        ("*.example.com", "http://a.b.example.com/", true),
        ("*.example.com", "https://notexample.com/", false),
        ("*.example.com", "https://example.com.evil.net/", false),
        ("example.com", "https://www.example.com/", false),
        ("EXAMPLE.com.", "https://example.COM/", true),
        // Ports.
        ("example.com", "https://example.com:8443/", true),
        ("example.com:8443", "https://example.com:8443/", true),
        ("example.com:8443", "https://example.com/", false),
        ("example.com:443", "https://example.com/", true),
        ("example.com:80", "https://example.com/", false),
        ("localhost:3000", "http://localhost:3000/app", true),
        ("[::1]:8080", "http://[::1]:8080/", true),
        ("127.0.0.1", "http://127.0.0.1:9000/", true),
        // Schemes and paths.
        ("https://example.com", "http://example.com/", false),
        ("*://example.com", "http://example.com/", true),
        ("example.com/docs", "https://example.com/docs", true),
        (
            "example.com/docs/*",
            "https://example.com/docs/api?q=1",
            true,
        ),
        ("example.com/docs", "https://example.com/docsearch", false),
        // IDNs: the Unicode and punycode spellings are one host.
        (
            "*.bücher.example",
            "https://www.xn--bcher-kva.example/",
            true,
        ),
        ("bücher.example", "https://bücher.example/", true),
        (
            "*.xn--bcher-kva.example",
            "https://shop.bücher.example/",
            true,
        ),
        ("bücher.example", "https://bucher.example/", false),
        // Only web pages with a host match.
        ("*", "https://anything.test/", true),
        ("*", "about:blank", false),
        ("*", "file:///etc/hosts", false),
        ("*", "chrome://newtab", false),
    ];
    for (pattern, url, expected) in cases {
        let p = SitePattern::parse(pattern).unwrap_or_else(|e| panic!("{e}"));
        let u = parse_url(url).unwrap();
        assert_eq!(p.matches(&u), *expected, "{pattern} vs {url}");
    }
}

#[test]
fn malformed_patterns_and_urls_are_diagnosed() {
    let bad = [
        ("", "it is empty"),
        ("*.", "the host is empty"),
        ("**.example.com", "first label"),
        ("ex*ample.com", "first label"),
        ("*.1.2.3.4", "not an IP address"),
        ("example.com:99999", "larger than 65535"),
        ("example.com:http", "not a number"),
        ("ftp://example.com", "the scheme must be"),
        ("exa mple.com", "whitespace"),
        ("user@example.com", "passwords"),
        ("[::1", "closing `]`"),
        ("a..b", "empty label"),
        ("example.com/do*cs", "inside it"),
    ];
    for (pattern, reason) in bad {
        let error = SitePattern::parse(pattern).expect_err(pattern).to_string();
        assert!(error.contains(reason), "{pattern}: {error}");
        assert!(
            error.starts_with(&format!("`{pattern}` is not a site pattern")),
            "{error}"
        );
    }
    for url in ["http://[::1", "not a url", "https://exa mple.com/", ""] {
        assert!(parse_url(url).is_err(), "{url}");
    }
}

/// Every example with its sends, compiled once.
fn examples() -> &'static Vec<(String, Agent, Vec<serde_json::Value>)> {
    static EXAMPLES: std::sync::OnceLock<Vec<(String, Agent, Vec<serde_json::Value>)>> =
        std::sync::OnceLock::new();
    EXAMPLES.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        [
            "coding-agent",
            "browser-agent",
            "pi-compat",
            "pi-compat-1.6",
            "chat-assistant",
        ]
        .into_iter()
        .map(|example| {
            let dir = root.join("examples").join(example);
            let spec = std::fs::read(dir.join("agent.toml")).unwrap();
            let agent = Agent::from_source(&spec, example, SpecFormat::Toml).unwrap();
            let sends = crate::support::examples::sorted(&dir.join("sends"))
                .iter()
                .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
                .collect();
            (example.to_owned(), agent, sends)
        })
        .collect()
    })
}

/// A skill for the hidden-skill property: visible ones get ordinary text, hidden ones a marker.
fn skill(i: usize, hidden: bool, sites: bool, name_clash: bool) -> serde_json::Value {
    let name = if name_clash {
        "shared-name".to_owned()
    } else {
        format!("skill-{i}")
    };
    let text = |what: &str| {
        if hidden {
            format!("zzhidden{what}{i}")
        } else {
            format!("visible {what} {i}")
        }
    };
    serde_json::json!({
        "name": if hidden && !name_clash { format!("zzhidden-name-{i}") } else { name },
        "description": text("description"),
        "instructions": text("instructions"),
        "location": if hidden { format!("/zzhidden/{i}/SKILL.md") } else { format!("/skills/{i}/SKILL.md") },
        "tags": ["widget"],
        "sites": if sites { serde_json::json!(["*"]) } else { serde_json::json!([]) },
        "disable_model_invocation": hidden,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// A hidden skill (`disable_model_invocation`) never appears in any target of any example,
    /// whatever the other skills, their order, their sites or name clashes with visible skills.
    #[test]
    fn a_hidden_skill_never_appears_in_any_output(
        example in 0usize..5,
        send in 0usize..8,
        skills in proptest::collection::vec((any::<bool>(), any::<bool>(), any::<bool>()), 1..6),
        inline_all in any::<bool>(),
    ) {
        let (name, agent, sends) = &examples()[example];
        let mut send = sends[send % sends.len()].clone();
        let list: Vec<serde_json::Value> = skills
            .iter()
            .enumerate()
            .map(|(i, &(hidden, sites, clash))| skill(i, hidden, sites, clash))
            .collect();
        send["skills"] = serde_json::Value::Array(list);
        if inline_all && name == "coding-agent" {
            let names: Vec<String> = (0..skills.len()).flat_map(|i| [format!("skill-{i}"), format!("zzhidden-name-{i}")]).chain(["shared-name".to_owned()]).collect();
            send["variables"]["inline_skills"] = serde_json::json!(names);
        }
        let ctx = SendContext::from_json(&serde_json::to_vec(&send).unwrap(), "send.json").unwrap();
        let assembly = agent.assemble(&ctx).unwrap();
        for target in agent.target_ids() {
            let composed = assembly.compose(target).unwrap();
            for text in [&composed.system, &composed.user] {
                prop_assert!(!text.contains("zzhidden"), "{} {}: {}", name, target, text);
            }
        }
    }
}

#[test]
fn site_pattern_fuzz_smoke() {
    let seeds: &[&[u8]] = &[
        b"\x0d*.example.comhttps://a.example.com/",
        b"\x0fexample.com:443https://example.com/",
        b"\x11*.b\xc3\xbccher.examplehttps://xn--bcher-kva.example/",
        b"\x05[::1http://[::1",
        b"\x01*about:blank",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for round in 0..4000 {
        let seed = seeds[round % seeds.len()];
        let mut data = seed.to_vec();
        for _ in 0..(round % 5) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state as usize) % (data.len() + 1);
            match state % 3 {
                0 if at < data.len() => data[at] ^= 1 << (state % 8),
                1 => data.insert(at, b"*.:/[]%\xff"[(state % 8) as usize]),
                _ if at < data.len() => {
                    data.remove(at);
                }
                _ => {}
            }
        }
        promptstack_core::fuzzing::site_pattern(&data);
    }
}
