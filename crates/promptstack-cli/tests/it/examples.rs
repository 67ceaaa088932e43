//! Every bundled example, end to end: `explain` for every send, and `render` for every send and
//! target, as snapshots; and preview = wire: the bytes `render` prints are the bytes the library
//! composes for that target.
//!
//! Examples are discovered from `examples/*/agent.toml` with their `sends/*.json`, so a new example
//! or send is covered as soon as it exists.

use std::path::PathBuf;

use crate::support::{promptstack, root};
use insta_cmd::assert_cmd_snapshot;
use promptstack::{Agent, SendContext, SpecFormat};

struct Example {
    name: String,
    spec: String,
    sends: Vec<(String, String)>,
}

fn examples() -> Vec<Example> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    let mut out = Vec::new();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !dir.join("agent.toml").exists() || !dir.join("sends").is_dir() {
            continue;
        }
        let mut sends: Vec<(String, String)> = std::fs::read_dir(dir.join("sends"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|p| {
                let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
                (
                    stem,
                    format!(
                        "examples/{name}/sends/{}",
                        p.file_name().unwrap().to_string_lossy()
                    ),
                )
            })
            .collect();
        sends.sort();
        out.push(Example {
            spec: format!("examples/{name}/agent.toml"),
            name,
            sends,
        });
    }
    assert!(
        out.iter().any(|e| e.name == "chat-assistant"),
        "the examples must be found"
    );
    out
}

fn load(example: &Example) -> Agent {
    let bytes = std::fs::read(root().join(&example.spec)).unwrap();
    let limits = promptstack::limits::Limits::default();
    promptstack::registry::compile(
        &bytes,
        &root().join(&example.spec),
        SpecFormat::Toml,
        &limits,
    )
    .unwrap()
}

/// pi-compat's renders (both versions) are compared byte for byte with the peer's own output in
/// `pi_compat.rs`; snapshots of them would only repeat those fixtures.
fn snapshotted(example: &Example) -> bool {
    example.name != "pi-compat" && example.name != "pi-compat-1.6"
}

#[test]
fn explain_every_send() {
    for example in examples().into_iter().filter(snapshotted) {
        for (send, path) in &example.sends {
            insta::with_settings!({ snapshot_suffix => format!("{}-{send}", example.name) }, {
                assert_cmd_snapshot!("explain", promptstack().args(["explain", &example.spec, "--send", path]));
            });
        }
    }
}

#[test]
fn render_every_send_and_target() {
    for example in examples().into_iter().filter(snapshotted) {
        let agent = load(&example);
        let targets: Vec<String> = agent.target_ids().map(str::to_owned).collect();
        for (send, path) in &example.sends {
            for target in &targets {
                insta::with_settings!({ snapshot_suffix => format!("{}-{send}-{target}", example.name) }, {
                    assert_cmd_snapshot!("render", promptstack().args(["render", &example.spec, "--send", path, "--target", target]));
                    assert_cmd_snapshot!("render_user", promptstack().args(["render", &example.spec, "--send", path, "--target", target, "--slot", "user"]));
                });
            }
        }
    }
}

/// Preview = wire: what `render` prints is, byte for byte, what the library composes.
#[test]
fn render_prints_exactly_the_composed_text() {
    for example in examples() {
        let agent = load(&example);
        for (_, path) in &example.sends {
            let ctx =
                SendContext::from_json(&std::fs::read(root().join(path)).unwrap(), path).unwrap();
            let assembly = agent.assemble(&ctx).unwrap();
            for target in agent.target_ids() {
                let composition = assembly.compose(target).unwrap();
                for (slot, expected) in
                    [("system", &composition.system), ("user", &composition.user)]
                {
                    let output = promptstack()
                        .args([
                            "render",
                            &example.spec,
                            "--send",
                            path,
                            "--target",
                            target,
                            "--slot",
                            slot,
                        ])
                        .output()
                        .unwrap();
                    assert!(
                        output.status.success(),
                        "{path} {target}: {}",
                        String::from_utf8_lossy(&output.stderr)
                    );
                    assert_eq!(output.stdout, expected.as_bytes(), "{path} {target} {slot}");
                }
                // The parts cover the text exactly, in order, with separators between them.
                let mut rebuilt = String::new();
                for part in composition
                    .parts
                    .iter()
                    .filter(|p| p.slot == promptstack::compose::Slot::System)
                {
                    assert!(part.range.start >= rebuilt.len());
                    rebuilt.push_str(&composition.system[rebuilt.len()..part.range.end]);
                }
                assert_eq!(rebuilt, composition.system);
            }
        }
    }
}

/// `render --format json` carries the same texts as the text format.
#[test]
fn json_render_matches_text_render() {
    for example in examples() {
        let agent = load(&example);
        for (_, path) in &example.sends {
            let output = promptstack()
                .args(["render", &example.spec, "--send", path, "--format", "json"])
                .output()
                .unwrap();
            assert!(output.status.success());
            let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            let ctx =
                SendContext::from_json(&std::fs::read(root().join(path)).unwrap(), path).unwrap();
            let assembly = agent.assemble(&ctx).unwrap();
            let targets = json["targets"].as_array().unwrap();
            assert_eq!(targets.len(), agent.target_ids().count());
            for target in targets {
                let id = target["target"].as_str().unwrap();
                assert_eq!(
                    target["system"].as_str().unwrap(),
                    assembly.compose(id).unwrap().system
                );
            }
            assert_eq!(
                json["fingerprint"].as_str().unwrap(),
                assembly.fingerprint().to_string()
            );
        }
    }
}

#[test]
fn every_example_lints_clean_against_its_sends() {
    for example in examples() {
        let mut command = promptstack();
        command.args(["lint", &example.spec]);
        for (_, path) in &example.sends {
            command.args(["--send", path]);
        }
        let output = command.output().unwrap();
        assert!(
            output.status.success(),
            "{}: {}",
            example.name,
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

/// `render --full` for every send of every example with a stage: a snapshot of the text and its
/// warnings; the text is byte for byte the composed target, and `--format json` carries the same
/// text and every warning.
#[test]
fn render_full_every_stage_send() {
    let mut rendered = 0;
    for example in examples() {
        let agent = load(&example);
        if agent.spec().stage.is_none() {
            continue;
        }
        for (send, path) in &example.sends {
            insta::with_settings!({ snapshot_suffix => format!("{}-{send}", example.name) }, {
                assert_cmd_snapshot!("render_full", promptstack().args(["render", &example.spec, "--send", path, "--full"]));
            });
            let ctx =
                SendContext::from_json(&std::fs::read(root().join(path)).unwrap(), path).unwrap();
            let full = agent.render_full(&ctx, None).unwrap();
            let composed = agent.assemble(&ctx).unwrap().compose(&full.target).unwrap();
            assert_eq!(full.text, composed.system, "{path}");
            let text = promptstack()
                .args(["render", &example.spec, "--send", path, "--full"])
                .output()
                .unwrap();
            assert_eq!(text.stdout, full.text.as_bytes(), "{path}");
            let json = promptstack()
                .args([
                    "render",
                    &example.spec,
                    "--send",
                    path,
                    "--full",
                    "--format",
                    "json",
                ])
                .output()
                .unwrap();
            assert!(json.status.success());
            let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
            assert_eq!(json["text"].as_str().unwrap(), full.text);
            assert_eq!(
                json["warnings"].as_array().unwrap().len(),
                full.warnings.len()
            );
            rendered += 1;
        }
    }
    assert!(
        rendered >= 8,
        "the voice-platform example has at least eight sends"
    );
}

/// The JSON of `render --full` for a send with an empty variable and an unresolved tool token.
#[test]
fn render_full_json_carries_the_warnings() {
    assert_cmd_snapshot!(promptstack().args([
        "render",
        "examples/voice-platform/agent.toml",
        "--send",
        "examples/voice-platform/sends/verified-empty-name.json",
        "--full",
        "--format",
        "json"
    ]));
}
