//! The embedded assets: every listed file is there, typed and non-empty, and the page's modules
//! import only embedded files.

use promptstack_inspector::{ASSETS, asset, file};

#[test]
fn every_asset_is_embedded_and_typed() {
    for a in ASSETS {
        assert!(!a.bytes.is_empty(), "{} is empty", a.path);
        let ext = a.path.rsplit('.').next().unwrap();
        let expected = match ext {
            "html" => "text/html",
            "css" => "text/css",
            "js" => "text/javascript",
            "json" => "application/json",
            other => panic!("unexpected asset type {other}"),
        };
        assert!(a.content_type.starts_with(expected), "{}", a.path);
    }
}

#[test]
fn unknown_paths_are_not_served() {
    for path in [
        "",
        "/",
        "../Cargo.toml",
        "index.html/",
        "INDEX.HTML",
        "assets/app.js",
    ] {
        assert!(asset(path).is_none(), "{path}");
        assert!(file(path).is_none(), "{path}");
    }
}

/// The page loads nothing from elsewhere: every import and every `src`/`href` names an embedded
/// file, relative to `/inspector/`.
#[test]
fn the_page_references_only_embedded_files() {
    let mut checked = 0;
    for a in ASSETS {
        let text = std::str::from_utf8(a.bytes).unwrap();
        for remote in [
            "src=\"http",
            "href=\"http",
            "from 'http",
            "fetch('http",
            "url(http",
            "//cdn",
        ] {
            assert!(
                !text.contains(remote),
                "{} loads a remote file ({remote})",
                a.path
            );
        }
        for marker in ["from './", "src=\"/inspector/", "href=\"/inspector/"] {
            for (at, _) in text.match_indices(marker) {
                let rest = &text[at + marker.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| !matches!(c, '\'' | '"'))
                    .collect();
                assert!(
                    asset(&name).is_some(),
                    "{} refers to {name}, not embedded",
                    a.path
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 5, "only {checked} references found");
}

#[test]
fn the_send_schema_is_served() {
    let (content_type, bytes) = file("send.schema.json").unwrap();
    assert_eq!(content_type, "application/json");
    let schema: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert!(schema["properties"]["model"].is_object(), "{schema}");
}

#[test]
fn the_formats_are_served_in_the_engines_order() {
    let (content_type, bytes) = file("formats.json").unwrap();
    assert_eq!(content_type, "application/json");
    let names: Vec<String> = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        names,
        ["anthropic", "openai-chat", "openai-responses", "gemini"]
    );
}
