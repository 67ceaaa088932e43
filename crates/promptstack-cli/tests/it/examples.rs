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
use promptstack_eval::suite::{Assertion, Suite};

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

/// The spec variants an example's eval suites compare against its `agent.toml`
/// (`examples/NAME/variants/*.toml`), as paths from the workspace root.
fn variants(example: &Example) -> Vec<String> {
    let dir = root().join("examples").join(&example.name).join("variants");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "toml"))
        .map(|e| {
            format!(
                "examples/{}/variants/{}",
                example.name,
                e.file_name().to_string_lossy()
            )
        })
        .collect();
    out.sort();
    out
}

/// `lint` over every example's spec and spec variants, with all its sends. Linting `agent.toml`
/// also checks the eval suites in `evals/` beside it.
#[test]
fn every_example_lints_clean_against_its_sends() {
    for example in examples() {
        for spec in std::iter::once(example.spec.clone()).chain(variants(&example)) {
            let mut command = promptstack();
            command.args(["lint", &spec]);
            for (_, path) in &example.sends {
                command.args(["--send", path]);
            }
            let output = command.output().unwrap();
            assert!(
                output.status.success(),
                "{spec}: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

/// A suite's files, parsed, with their paths from the workspace root.
fn suites(example: &Example) -> Vec<(String, Suite)> {
    let dir = root().join("examples").join(&example.name).join("evals");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = format!(
                "examples/{}/evals/{}",
                example.name,
                path.file_name().unwrap().to_string_lossy()
            );
            let suite = Suite::parse(&std::fs::read(&path).unwrap(), &name)
                .unwrap_or_else(|e| panic!("{e}"));
            (name, suite)
        })
        .collect()
}

/// The tools an assertion names, and whether it can pass only if the tool is called.
fn asserted_tools(assertion: &Assertion) -> Vec<(&str, bool)> {
    match assertion {
        Assertion::ToolUsed { tool, not } | Assertion::ToolArguments { tool, not, .. } => {
            vec![(tool.as_str(), !not)]
        }
        Assertion::ToolSequence { tools } => tools.iter().map(|t| (t.as_str(), true)).collect(),
        Assertion::ToolCount { tool, min, .. } => {
            tool.iter().map(|t| (t.as_str(), *min > 0)).collect()
        }
        Assertion::Injection { tool, .. } => tool.iter().map(|t| (t.as_str(), false)).collect(),
        _ => Vec::new(),
    }
}

/// What `lint` cannot see in a suite, checked against the agent it belongs to: every version's
/// spec compiles; every scenario's send assembles with it; every scripted tool and every tool an
/// assertion needs called is offered by that send; every tool an assertion forbids is one the
/// spec declares (a misspelt name would make the assertion pass whatever the model does); and
/// every widget asserted on is one the prompt tells the model to write.
#[test]
fn every_example_suite_fits_its_agent() {
    let mut checked = 0;
    for example in examples() {
        for (name, suite) in suites(&example) {
            for version in &suite.matrix.versions {
                let Some(spec) = &version.spec else { continue };
                let spec_path = format!("examples/{}/{spec}", example.name);
                let agent = load(&Example {
                    name: example.name.clone(),
                    spec: spec_path.clone(),
                    sends: Vec::new(),
                });
                let target = agent.target_ids().next().unwrap().to_owned();
                for scenario in &suite.scenarios {
                    let at = format!("{name}: {} with {spec_path}", scenario.name);
                    let bytes = match (&scenario.send, &scenario.context) {
                        (Some(send), None) => {
                            std::fs::read(root().join("examples").join(&example.name).join(send))
                                .unwrap()
                        }
                        (None, Some(context)) => serde_json::to_vec(context).unwrap(),
                        _ => panic!("{at}: a scenario has a send or a context"),
                    };
                    let ctx = SendContext::from_json_for(&bytes, &at, agent.spec())
                        .unwrap_or_else(|e| panic!("{at}: {e}"));
                    let assembly = agent.assemble(&ctx).unwrap_or_else(|e| panic!("{at}: {e}"));
                    let toolset = assembly.toolset();
                    let declared = |tool: &str| {
                        toolset.contains(tool) || toolset.excluded().iter().any(|t| t.name == tool)
                    };
                    for scripted in &scenario.tools {
                        assert!(
                            toolset.contains(&scripted.tool),
                            "{at}: scripted tool `{}` is not offered",
                            scripted.tool
                        );
                    }
                    let system = assembly.compose(&target).unwrap().system;
                    for assertion in &scenario.assertions {
                        for (tool, needs_call) in asserted_tools(assertion) {
                            if needs_call {
                                assert!(toolset.contains(tool), "{at}: `{tool}` is not offered");
                            } else {
                                assert!(declared(tool), "{at}: `{tool}` is not a tool of the spec");
                            }
                        }
                        if let Assertion::WidgetUsed { widget, .. } = assertion {
                            assert!(
                                system.contains(&format!("<{widget}")),
                                "{at}: the prompt never mentions the widget `{widget}`"
                            );
                        }
                    }
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 0, "the example suites must be found");
}

/// Takes the kernel block's text out of a parsed spec.
fn take_kernel_text(spec: &mut toml::Table) -> Option<toml::Value> {
    spec.get_mut("blocks")?
        .as_array_mut()?
        .iter_mut()
        .filter_map(toml::Value::as_table_mut)
        .find(|b| b.get("id").and_then(toml::Value::as_str) == Some("kernel"))?
        .remove("text")
}

/// A spec variant differs from its agent's `agent.toml` only where its A/B question says: the
/// kernel block's text and the description. Everything else stays in step with the original.
#[test]
fn spec_variants_differ_only_in_their_kernel() {
    let mut compared = 0;
    for example in examples() {
        let read = |path: &str| -> toml::Table {
            toml::from_str(&std::fs::read_to_string(root().join(path)).unwrap()).unwrap()
        };
        let mut base = read(&example.spec);
        let base_kernel = take_kernel_text(&mut base);
        base.remove("description");
        for variant in variants(&example) {
            let mut varied = read(&variant);
            let kernel = take_kernel_text(&mut varied);
            assert!(kernel.is_some(), "{variant}: no kernel text");
            assert_ne!(
                kernel, base_kernel,
                "{variant}: the kernel is the original's"
            );
            varied.remove("description");
            assert_eq!(
                varied, base,
                "{variant} differs from {} beyond its kernel",
                example.spec
            );
            compared += 1;
        }
    }
    assert!(compared > 0, "the spec variants must be found");
}

/// A suite that runs another's scenarios on more models (`NAME-tiers.toml` beside `NAME.toml`)
/// holds exactly the same scenarios, so the two never drift apart.
#[test]
fn tiered_suites_hold_the_same_scenarios() {
    let mut compared = 0;
    for example in examples() {
        let suites = suites(&example);
        for (name, tiered) in &suites {
            let Some(stem) = name.strip_suffix("-tiers.toml") else {
                continue;
            };
            let base = format!("{stem}.toml");
            let (_, original) = suites
                .iter()
                .find(|(n, _)| *n == base)
                .unwrap_or_else(|| panic!("{name} has no {base}"));
            assert_eq!(
                tiered.scenarios, original.scenarios,
                "{name} and {base} differ"
            );
            assert_eq!(tiered.matrix.versions, original.matrix.versions);
            assert!(tiered.matrix.models.len() > original.matrix.models.len());
            compared += 1;
        }
    }
    assert!(compared > 0, "the tiered suites must be found");
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
