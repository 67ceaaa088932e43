//! Byte parity with a peer assembler: every case under `examples/pi-compat/cases/` renders, through
//! `promptstack render`, exactly the `expected.txt` that the real peer package produced.
//!
//! Each case's send (`examples/pi-compat/sends/<case>.json`) is derived here from the case's
//! `input.json`, and the committed file must equal the derivation, so the sends cannot drift from
//! the inputs the peer saw. `PROMPTSTACK_WRITE_SENDS=1` rewrites them.

use std::process::Command;

use crate::support::root;
use insta_cmd::get_cargo_bin;
use serde_json::{Map, Value, json};

fn cases() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("examples/pi-compat/cases"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("input.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The send context for a case: options mapped onto the send, absent and `null` options left out.
fn send_for(input: &Value) -> Value {
    let options = input["options"].as_object().unwrap();
    let present = |key: &str| options.get(key).filter(|v| !v.is_null());
    let mut send = Map::new();
    send.insert("now".into(), input["now"].clone());
    send.insert(
        "model".into(),
        json!({"id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "provider": "anthropic"}),
    );
    send.insert("cwd".into(), options["cwd"].clone());
    if let Some(files) = present("contextFiles") {
        send.insert("context_files".into(), files.clone());
    }
    if let Some(skills) = present("skills") {
        let skills: Vec<Value> = skills
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let mut skill = json!({
                    "name": s["name"],
                    "description": s["description"],
                    "location": s["filePath"],
                });
                if s["disableModelInvocation"] == json!(true) {
                    skill["disable_model_invocation"] = json!(true);
                }
                skill
            })
            .collect();
        send.insert("skills".into(), Value::Array(skills));
    }
    let mut variables = Map::new();
    variables.insert("package_dir".into(), input["packageDir"].clone());
    for (option, variable) in [
        ("customPrompt", "custom_prompt"),
        ("selectedTools", "selected_tools"),
        ("toolSnippets", "tool_snippets"),
        ("promptGuidelines", "prompt_guidelines"),
        ("appendSystemPrompt", "append"),
    ] {
        if let Some(value) = present(option) {
            variables.insert(variable.into(), value.clone());
        }
    }
    send.insert("variables".into(), Value::Object(variables));
    Value::Object(send)
}

fn render(send: &str) -> std::process::Output {
    Command::new(get_cargo_bin("promptstack"))
        .current_dir(root())
        .args([
            "render",
            "examples/pi-compat/agent.toml",
            "--send",
            send,
            "--target",
            "system",
        ])
        .output()
        .unwrap()
}

#[test]
fn every_case_renders_the_peer_bytes() {
    let names = cases();
    assert!(names.len() >= 12, "the parity cases must be found");
    let write = std::env::var_os("PROMPTSTACK_WRITE_SENDS").is_some();
    let mut mismatches = Vec::new();
    for name in &names {
        let dir = root().join("examples/pi-compat/cases").join(name);
        let input: Value =
            serde_json::from_slice(&std::fs::read(dir.join("input.json")).unwrap()).unwrap();
        let send = send_for(&input);
        let send_path = format!("examples/pi-compat/sends/{name}.json");
        let file = root().join(&send_path);
        if write {
            let mut text = serde_json::to_string_pretty(&send).unwrap();
            text.push('\n');
            std::fs::write(&file, text).unwrap();
        }
        let committed: Value = serde_json::from_slice(
            &std::fs::read(&file).unwrap_or_else(|_| panic!("{send_path} is missing")),
        )
        .unwrap();
        assert_eq!(
            committed, send,
            "{send_path} is stale; rerun with PROMPTSTACK_WRITE_SENDS=1"
        );
        let output = render(&send_path);
        assert!(
            output.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let expected = std::fs::read(dir.join("expected.txt")).unwrap();
        if output.stdout != expected {
            let got = String::from_utf8_lossy(&output.stdout);
            let want = String::from_utf8_lossy(&expected);
            let at = got
                .char_indices()
                .zip(want.chars())
                .find(|((_, a), b)| a != b)
                .map_or(got.len().min(want.len()), |((i, _), _)| i);
            let from = got[..at].rfind('\n').map_or(0, |i| i + 1);
            mismatches.push(format!(
                "{name}: first difference at byte {at}\n  got:  {:?}\n  want: {:?}",
                &got[from..(at + 60).min(got.len())],
                want.get(from..(at + 60).min(want.len())).unwrap_or("")
            ));
        }
        if let Some(same) = input["sameAs"].as_str() {
            let other = std::fs::read(
                root()
                    .join("examples/pi-compat/cases")
                    .join(same)
                    .join("expected.txt"),
            )
            .unwrap();
            assert_eq!(expected, other, "{name} must equal {same}");
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
