//! Malformed specs and sends: every error class is reported with its location, a key path and a
//! hint, all at once, never a panic. Each case under `tests/data/malformed/` is snapshotted.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use promptstack_core::diagnostic::Severity;
use promptstack_core::{Agent, SendContext, SpecFormat};

/// What loading a spec says: the error, or (for specs that load) its lint errors.
fn spec_report(bytes: &[u8], name: &str) -> String {
    match Agent::from_source(bytes, name, SpecFormat::from_name(name)) {
        Err(error) => error.to_string(),
        Ok(agent) => {
            let errors: Vec<String> = agent
                .lint()
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .map(|d| d.to_string())
                .collect();
            assert!(
                !errors.is_empty(),
                "{name} loaded without errors; a malformed case must fail"
            );
            format!("(loads, with lint errors)\n{}", errors.join("\n"))
        }
    }
}

fn relative(path: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn specs() {
    insta::glob!("../data/malformed/spec", "*.*", |path| {
        let bytes = std::fs::read(path).unwrap();
        insta::assert_snapshot!(spec_report(&bytes, &relative(path)));
    });
}

#[test]
fn sends() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/malformed/send/base.toml");
    let agent = Agent::from_source(
        &std::fs::read(&base).unwrap(),
        "base.toml",
        SpecFormat::Toml,
    )
    .unwrap();
    insta::glob!("../data/malformed/send", "*.json", |path| {
        let bytes = std::fs::read(path).unwrap();
        let report = match SendContext::from_json(&bytes, &relative(path)) {
            Err(error) => error.to_string(),
            Ok(ctx) => panic!(
                "{} parsed: {:?}",
                path.display(),
                agent.assemble(&ctx).map(|a| a.stable().to_owned())
            ),
        };
        insta::assert_snapshot!(report);
    });
}

/// A spec over the size limit is refused before it is parsed.
#[test]
fn huge_spec() {
    let mut text = String::from("spec_version = 1\nname = \"huge\"\n");
    while text.len() <= promptstack_core::spec::MAX_SPEC_BYTES {
        text.push_str(
            "# padding padding padding padding padding padding padding padding padding\n",
        );
    }
    insta::assert_snapshot!(spec_report(text.as_bytes(), "huge.toml"));
}

/// Deep nesting is refused before any parser recurses.
#[test]
fn deeply_nested_inputs() {
    let toml = format!(
        "spec_version = 1\nname = \"deep\"\nx = {}1{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let json = format!(
        "{{\"spec_version\": 1, \"x\": {}1{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let send = format!(
        "{{\"now\": \"2026-11-30T09:15:00Z\", \"settings\": {{\"x\": {}1{}}}}}",
        "[".repeat(5_000),
        "]".repeat(5_000)
    );
    let send = SendContext::from_json(send.as_bytes(), "deep-send.json")
        .unwrap_err()
        .to_string();
    insta::assert_snapshot!(format!(
        "{}\n\n{}\n\n{send}",
        spec_report(toml.as_bytes(), "deep.toml"),
        spec_report(json.as_bytes(), "deep.json")
    ));
}

/// Bytes that are not UTF-8 are located precisely.
#[test]
fn non_utf8() {
    let mut bytes = b"spec_version = 1\nname = \"caf".to_vec();
    bytes.extend([0xC3, 0x28]);
    bytes.extend(b"\"\n");
    let send = SendContext::from_json(&[b'{', 0xFF, b'}'], "send.json")
        .unwrap_err()
        .to_string();
    insta::assert_snapshot!(format!("{}\n\n{send}", spec_report(&bytes, "latin1.toml")));
}

/// A unit enum is read from its name only: serde alone would also take `{"name": null}`, which
/// the send's schema refuses, so the fast reader refuses it too (found by the read-equivalence
/// property test).
#[test]
fn an_enum_written_as_a_map_is_refused() {
    use promptstack_core::SendContext;
    for send in [
        r#"{"now": "2026-11-30T11:20:00+00:00", "model": {"id": "m", "name": "M", "provider": "p", "tool_usage": {"native": null}}}"#,
        r#"{"now": "2026-11-30T11:20:00+00:00", "model": {"id": "m", "name": "M", "provider": "p"}, "mcp_servers": [{"server": "s", "status": "failed", "failure": {"stage": {"connect": null}, "timed_out": false, "message": "refused"}}]}"#,
    ] {
        let error = SendContext::from_json(send.as_bytes(), "send.json").unwrap_err();
        assert!(error.to_string().contains("not allowed"), "{error}");
    }
}
