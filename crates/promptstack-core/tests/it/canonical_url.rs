//! The canonical-URL function: recorded cases and properties.

use promptstack_core::canonical_url::{canonicalize_url, is_tracking_parameter, url_key};
use proptest::prelude::*;

#[test]
fn recorded_cases() {
    let cases = include_str!("../data/canonical_url/cases.txt");
    let mut out = String::new();
    for line in cases.lines().filter(|l| !l.starts_with('#')) {
        let result = match canonicalize_url(line) {
            Ok(url) => url.into_string(),
            Err(e) => format!("error: {e}"),
        };
        out.push_str(&format!("{line:?}\n    => {result}\n"));
    }
    insta::assert_snapshot!(out);
}

fn url_strategy() -> impl Strategy<Value = String> {
    let scheme = prop_oneof!["http", "https", "HTTP", "Https"];
    let host = prop::collection::vec("[a-zA-Z0-9][a-zA-Z0-9-]{0,6}", 1..4)
        .prop_map(|labels| labels.join("."));
    let port = prop_oneof![
        Just(String::new()),
        Just(":80".into()),
        Just(":443".into()),
        "(:[0-9]{1,4})"
    ];
    let segment = "([a-zA-Z0-9._~-]|%[0-9a-fA-F]{2}|é|/|\\.\\.| ){0,8}";
    let path = prop::collection::vec(segment, 0..4).prop_map(|s| format!("/{}", s.join("/")));
    let param = prop_oneof![
        "[a-z]{1,3}=[a-zA-Z0-9%]{0,4}",
        "utm_[a-z]{1,6}=[a-z]{0,3}",
        Just("fbclid=1".to_owned()),
        Just(String::new()),
    ];
    let query = prop::option::of(prop::collection::vec(param, 0..4).prop_map(|p| p.join("&")));
    let fragment = prop::option::of("[a-z#/?]{0,5}");
    (scheme, host, port, path, query, fragment).prop_map(|(s, h, p, path, q, f)| {
        let mut url = format!("{s}://{h}{p}{path}");
        if let Some(q) = q {
            url.push('?');
            url.push_str(&q);
        }
        if let Some(f) = f {
            url.push('#');
            url.push_str(&f);
        }
        url
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn canonicalisation_is_idempotent(input in url_strategy()) {
        if let Ok(once) = canonicalize_url(&input) {
            let twice = canonicalize_url(once.as_str()).expect("a canonical url stays valid");
            prop_assert_eq!(once, twice);
        }
    }

    #[test]
    fn arbitrary_text_is_idempotent_and_never_panics(input in ".{0,40}") {
        if let Ok(once) = canonicalize_url(&input) {
            prop_assert_eq!(canonicalize_url(once.as_str()).unwrap(), once);
        }
        let key = url_key(&input);
        prop_assert_eq!(url_key(&key), key);
    }

    #[test]
    fn canonical_form_has_the_documented_shape(input in url_strategy()) {
        let Ok(canonical) = canonicalize_url(&input) else { return Ok(()) };
        let parsed = url::Url::parse(canonical.as_str()).unwrap();
        prop_assert!(matches!(parsed.scheme(), "http" | "https"));
        prop_assert!(parsed.fragment().is_none());
        // The parser reports `None` for a default port, so a port that is left is a real one.
        prop_assert!(!canonical.as_str().contains(":80/") || parsed.scheme() == "https");
        prop_assert!(!canonical.as_str().contains(":443/") || parsed.scheme() == "http");
        prop_assert_eq!(parsed.host_str().unwrap().to_ascii_lowercase(), parsed.host_str().unwrap());
        prop_assert!(parsed.path() == "/" || !parsed.path().ends_with('/'));
        if let Some(query) = parsed.query() {
            prop_assert!(!query.is_empty());
            for pair in query.split('&') {
                prop_assert!(!pair.is_empty());
                let name = pair.split('=').next().unwrap();
                prop_assert!(!is_tracking_parameter(name), "{} kept in {}", name, canonical);
            }
        }
    }

    #[test]
    fn spellings_of_one_page_share_a_form(input in url_strategy(), fragment in "[a-z]{0,5}") {
        // Trailing spaces are trimmed only at the very end of the text, so drop them first.
        let base = input.split('#').next().unwrap().trim_end().to_owned();
        let Ok(canonical) = canonicalize_url(&base) else { return Ok(()) };
        let with_fragment = format!("{base}#{fragment}");
        prop_assert_eq!(canonicalize_url(&with_fragment).unwrap(), canonical.clone());
        let separator = if base.contains('?') { '&' } else { '?' };
        let tracked = format!("{base}{separator}utm_campaign=spring");
        prop_assert_eq!(canonicalize_url(&tracked).unwrap(), canonical.clone());
        // Only scheme and host are case-insensitive; path and query keep their case.
        let (scheme_host, rest) = split_after_host(&base);
        let upper_host = format!("{}{}", scheme_host.to_ascii_uppercase(), rest);
        prop_assert_eq!(canonicalize_url(&upper_host).unwrap(), canonical);
    }
}

/// Splits `scheme://host[:port]` from the rest of a generated URL.
fn split_after_host(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").unwrap() + 3;
    let end = url[after_scheme..]
        .find('/')
        .map_or(url.len(), |i| after_scheme + i);
    url.split_at(end)
}

#[test]
fn fuzz_smoke() {
    crate::support::fuzz_smoke(promptstack_core::fuzzing::canonical_url);
}
