//! Byte parity with a peer assembler: every case under `examples/pi-compat/cases/` (0.73.1) and
//! `examples/pi-compat-1.6/cases/` (1.6.0) renders, through `promptstack render`, exactly the
//! `expected.txt` that the real peer package produced, or, for a 1.6 case that `differs` (a
//! context file that would break out of its tag), its `intended.txt`: the peer's own output for
//! the input with the context files escaped as promptstack escapes them.
//!
//! Each case's send (`examples/<example>/sends/<case>.json`) is derived here from the case's
//! `input.json`, and the committed file must equal the derivation, so the sends cannot drift from
//! the inputs the peer saw. `PROMPTSTACK_WRITE_SENDS=1` rewrites them.

use std::process::Command;

use crate::support::root;
use insta_cmd::get_cargo_bin;
use serde_json::{Map, Value, json};

fn cases(example: &str) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(root().join(format!("examples/{example}/cases")))
            .unwrap()
            .flatten()
            .filter(|e| e.path().join("input.json").exists())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
    names.sort();
    names
}

/// The send context for a 0.73.1 case: options mapped onto the send, absent and `null` options
/// left out.
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

/// The send context for a 1.6.0 case: as for 0.73.1, with the options 1.6.0 added, and
/// `sections` as a list of `{name, content}` in the object's key order (a send's objects do not
/// keep their order).
fn send_for_1_6(input: &Value, text: &str) -> Value {
    let mut send = send_for(input);
    let options = input["options"].as_object().unwrap();
    let present = |key: &str| options.get(key).filter(|v| !v.is_null());
    let variables = send["variables"].as_object_mut().unwrap();
    for (option, variable) in [
        ("forceSystemPrompt", "force_prompt"),
        ("hiddenTools", "hidden_tools"),
        ("toolGuidelines", "tool_guidelines"),
    ] {
        if let Some(value) = present(option) {
            variables.insert(variable.into(), value.clone());
        }
    }
    if let Some(sections) = present("sections") {
        let list: Vec<Value> = section_names(text)
            .into_iter()
            .map(|name| json!({"name": name, "content": sections[&name]}))
            .collect();
        variables.insert("sections".into(), Value::Array(list));
    }
    send
}

/// The keys of `options.sections` in the order `input.json` writes them: a `Value`'s maps are
/// sorted, so the names are read again from the text through a visitor that keeps the order.
fn section_names(text: &str) -> Vec<String> {
    struct Keys(Vec<String>);
    impl<'de> serde::Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Keys;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some((key, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                        keys.push(key);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    #[derive(serde::Deserialize)]
    struct Options {
        sections: Keys,
    }
    #[derive(serde::Deserialize)]
    struct Input {
        options: Options,
    }
    let parsed: Input = serde_json::from_str(text).unwrap();
    parsed.options.sections.0
}

fn render(spec: &str, send: &str) -> std::process::Output {
    Command::new(get_cargo_bin("promptstack"))
        .current_dir(root())
        .args(["render", spec, "--send", send, "--target", "system"])
        .output()
        .unwrap()
}

#[test]
fn every_case_renders_the_peer_bytes() {
    check_example("pi-compat", 0, &|input, _| send_for(input));
}

#[test]
fn every_1_6_case_renders_the_peer_bytes() {
    // One case differs from the peer: a context file that would close its tag is escaped.
    check_example("pi-compat-1.6", 1, &send_for_1_6);
}

/// Renders every case of an example and compares the bytes with the peer's (`intended.txt` where
/// the case `differs`, which must then differ from `expected.txt`).
fn check_example(example: &str, differ: usize, derive: &dyn Fn(&Value, &str) -> Value) {
    let names = cases(example);
    assert!(names.len() >= 12, "the parity cases must be found");
    let write = std::env::var_os("PROMPTSTACK_WRITE_SENDS").is_some();
    let spec = format!("examples/{example}/agent.toml");
    let mut mismatches = Vec::new();
    let mut differing = 0;
    for name in &names {
        let dir = root().join(format!("examples/{example}/cases")).join(name);
        let text = std::fs::read_to_string(dir.join("input.json")).unwrap();
        let input: Value = serde_json::from_str(&text).unwrap();
        let send = derive(&input, &text);
        let send_path = format!("examples/{example}/sends/{name}.json");
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
        let output = render(&spec, &send_path);
        assert!(
            output.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let peer = std::fs::read(dir.join("expected.txt")).unwrap();
        let expected = if input.get("differs").is_some() {
            differing += 1;
            let intended = std::fs::read(dir.join("intended.txt")).unwrap();
            assert_ne!(intended, peer, "{name} differs, so intended.txt must");
            intended
        } else {
            assert!(
                !dir.join("intended.txt").exists(),
                "{name}: intended.txt without differs"
            );
            peer.clone()
        };
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
                    .join(format!("examples/{example}/cases"))
                    .join(same)
                    .join("expected.txt"),
            )
            .unwrap();
            assert_eq!(peer, other, "{name} must equal {same}");
        }
    }
    // Only the escaping of context files may differ from the peer, and only where stated.
    assert_eq!(
        differing, differ,
        "{example}: cases that differ from the peer"
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
