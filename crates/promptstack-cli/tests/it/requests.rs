//! Provider requests end to end: snapshots of every body (every example send × format), the
//! bodies type-checked against the official SDKs' request types with `tsc --strict`, and
//! preview = wire for `render --format <provider>`.
//!
//! The SDK check needs the pinned npm packages in `tests/sdk` (`scripts/test` installs them).
//! Anthropic bodies are checked as `MessageCreateParamsNonStreaming` (`@anthropic-ai/sdk`), Chat
//! Completions as `ChatCompletionCreateParamsNonStreaming` and Responses as
//! `ResponseCreateParamsNonStreaming` (`openai`). `@google/genai` types its own method
//! parameters, not the REST body, so Gemini bodies are checked against the REST shape built from
//! its `Content`, `Tool` and `GenerationConfig` types (the same objects the REST API takes).

use std::path::PathBuf;
use std::process::Command;

use crate::support::root;
use insta_cmd::get_cargo_bin;
use promptstack::provider::{Conversation, Format, Request, RequestOptions, Rules};
use promptstack::{Agent, SendContext, SpecFormat};

const SPEC: &str = "examples/chat-assistant/agent.toml";
const CONVERSATION: &str = "crates/promptstack-cli/tests/data/conversations/tool-turn.json";

fn agent() -> Agent {
    let bytes = std::fs::read(root().join(SPEC)).unwrap();
    Agent::from_source(&bytes, SPEC, SpecFormat::Toml).unwrap()
}

fn sends() -> Vec<(String, SendContext)> {
    let dir = root().join("examples/chat-assistant/sends");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 5, "the example sends must be found");
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let ctx = SendContext::from_json(&std::fs::read(&p).unwrap(), &name).unwrap();
            (name, ctx)
        })
        .collect()
}

fn conversation() -> Conversation {
    Conversation::from_json(
        &std::fs::read(root().join(CONVERSATION)).unwrap(),
        CONVERSATION,
    )
    .unwrap()
}

/// A model of each family whose rules place explicit breakpoints where the family has them.
fn model(format: Format) -> &'static str {
    match format {
        Format::Anthropic => "claude-sonnet-4-5",
        Format::OpenaiChat | Format::OpenaiResponses => "gpt-5.6",
        Format::Gemini => "gemini-2.5-flash",
    }
}

fn build(
    agent: &Agent,
    ctx: &SendContext,
    conversation: &Conversation,
    format: Format,
    target: &str,
    model: Option<&str>,
    gap: Option<u32>,
) -> Request {
    let assembly = agent.assemble(ctx).unwrap();
    let mut options = RequestOptions::new(format, target);
    options.model = model.map(str::to_owned);
    options.expected_gap_seconds = gap;
    agent
        .request(&assembly, conversation, Rules::bundled(), &options)
        .unwrap()
}

/// Every body the SDK check covers: every send × target × format, with and without the
/// conversation, with the representative explicit-breakpoint models and with the send's own
/// model at a long gap (automatic caching with extended retention where the rules offer it).
fn all_bodies() -> Vec<(String, Format, String)> {
    let agent = agent();
    let conversation = conversation();
    let empty = Conversation::default();
    let mut out = Vec::new();
    for (name, ctx) in sends() {
        for target in agent.target_ids() {
            for format in Format::ALL {
                for (label, conv) in [("new", &empty), ("conv", &conversation)] {
                    for (model, gap) in [(Some(model(format)), Some(60)), (None, Some(3600))] {
                        let request = build(&agent, &ctx, conv, format, target, model, gap);
                        out.push((
                            format!("{name}/{target}/{label}/{}", request.model),
                            format,
                            request.body,
                        ));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn snapshot_every_body() {
    let agent = agent();
    let empty = Conversation::default();
    for (name, ctx) in sends() {
        for format in Format::ALL {
            let request = build(
                &agent,
                &ctx,
                &empty,
                format,
                "legacy",
                Some(model(format)),
                Some(60),
            );
            insta::with_settings!({ snapshot_suffix => format!("{name}-{}", format.as_str()) }, {
                insta::assert_json_snapshot!("body", request.body_value());
            });
        }
    }
    let (_, research) = sends().into_iter().find(|(n, _)| n == "research").unwrap();
    for format in Format::ALL {
        let request = build(
            &agent,
            &research,
            &conversation(),
            format,
            "legacy",
            Some(model(format)),
            Some(60),
        );
        insta::with_settings!({ snapshot_suffix => format!("research-conversation-{}", format.as_str()) }, {
            insta::assert_json_snapshot!("body", request.body_value());
            insta::assert_json_snapshot!("plan", request.plan);
        });
    }
}

fn sdk_dir() -> PathBuf {
    let dir = root().join("crates/promptstack-cli/tests/sdk");
    assert!(
        dir.join("node_modules/.bin/tsc").exists(),
        "the SDK type packages are not installed: run `npm ci --prefix {}` (scripts/test does)",
        dir.display()
    );
    dir
}

const PRELUDE: &str = r#"import type Anthropic from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import type { Content, GenerationConfig, Tool, ToolConfig } from "@google/genai";

/** The REST body of Gemini `models.generateContent`, from @google/genai's own object types. */
interface GeminiGenerateContentRequest {
  contents: Content[];
  systemInstruction?: Content;
  tools?: Tool[];
  toolConfig?: ToolConfig;
  cachedContent?: string;
  generationConfig?: GenerationConfig;
}
"#;

fn sdk_type(format: Format) -> &'static str {
    match format {
        Format::Anthropic => "Anthropic.MessageCreateParamsNonStreaming",
        Format::OpenaiChat => "OpenAI.ChatCompletionCreateParamsNonStreaming",
        Format::OpenaiResponses => "OpenAI.Responses.ResponseCreateParamsNonStreaming",
        Format::Gemini => "GeminiGenerateContentRequest",
    }
}

/// Writes a .ts file assigning each body as an object literal to its SDK type, runs
/// `tsc --noEmit --strict` over it, and returns (success, output).
fn typecheck(file: &str, bodies: &[(String, Format, String)]) -> (bool, String) {
    let dir = sdk_dir();
    let generated = dir.join("generated");
    std::fs::create_dir_all(&generated).unwrap();
    let mut source = String::from(PRELUDE);
    for (i, (label, format, body)) in bodies.iter().enumerate() {
        source.push_str(&format!(
            "\n// {label}\nexport const body{i}: {} = {body};\n",
            sdk_type(*format)
        ));
    }
    let path = generated.join(file);
    std::fs::write(&path, source).unwrap();
    let output = Command::new(dir.join("node_modules/.bin/tsc"))
        .current_dir(&dir)
        .args([
            "--noEmit",
            "--strict",
            "--target",
            "es2022",
            "--module",
            "nodenext",
            "--moduleResolution",
            "nodenext",
            "--skipLibCheck",
        ])
        .arg(&path)
        .output()
        .expect("tsc runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn every_body_type_checks_against_the_official_sdks() {
    let bodies = all_bodies();
    for format in Format::ALL {
        assert!(bodies.iter().any(|(_, f, _)| *f == format));
    }
    // The explicit-breakpoint paths are really exercised.
    assert!(
        bodies
            .iter()
            .any(|(_, _, b)| b.contains("\"cache_control\""))
    );
    assert!(
        bodies
            .iter()
            .any(|(_, _, b)| b.contains("\"prompt_cache_breakpoint\""))
    );
    assert!(
        bodies
            .iter()
            .any(|(_, _, b)| b.contains("\"prompt_cache_retention\""))
    );
    assert!(
        bodies
            .iter()
            .any(|(_, _, b)| b.contains("\"functionResponse\""))
    );
    let (ok, output) = typecheck("bodies.ts", &bodies);
    assert!(ok, "tsc rejected a request body:\n{output}");
}

/// The check has teeth: a misspelled field and a wrong literal are both rejected.
#[test]
fn the_type_check_rejects_a_misspelled_field_and_a_bad_literal() {
    let agent = agent();
    let (_, ctx) = sends().into_iter().find(|(n, _)| n == "research").unwrap();
    let empty = Conversation::default();
    let openai = build(
        &agent,
        &ctx,
        &empty,
        Format::OpenaiChat,
        "legacy",
        None,
        None,
    )
    .body;
    let anthropic = build(
        &agent,
        &ctx,
        &empty,
        Format::Anthropic,
        "legacy",
        Some("claude-sonnet-4-5"),
        Some(60),
    )
    .body;
    assert!(openai.contains("\"prompt_cache_key\""));
    assert!(anthropic.contains("\"type\":\"ephemeral\""));
    let cases = [
        (
            "misspelled-key.ts",
            Format::OpenaiChat,
            openai.replace("\"prompt_cache_key\"", "\"prompt_cache_kee\""),
            "prompt_cache_kee",
        ),
        (
            "bad-literal.ts",
            Format::Anthropic,
            anthropic.replacen("\"type\":\"ephemeral\"", "\"type\":\"ephemerall\"", 1),
            "ephemerall",
        ),
    ];
    for (file, format, body, needle) in cases {
        let (ok, output) = typecheck(file, &[(needle.to_owned(), format, body)]);
        assert!(!ok, "tsc accepted {file}");
        assert!(output.contains(needle), "{file}: {output}");
    }
}

/// Preview = wire: `render --format <provider>` prints exactly the body the library builds.
#[test]
fn render_prints_exactly_the_request_body() {
    let agent = agent();
    let (_, ctx) = sends().into_iter().find(|(n, _)| n == "research").unwrap();
    for format in Format::ALL {
        let expected = build(
            &agent,
            &ctx,
            &conversation(),
            format,
            "harness",
            Some(model(format)),
            Some(60),
        );
        let output = Command::new(get_cargo_bin("promptstack"))
            .current_dir(root())
            .args([
                "render",
                SPEC,
                "--send",
                "examples/chat-assistant/sends/research.json",
                "--target",
                "harness",
                "--format",
                format.as_str(),
                "--conversation",
                CONVERSATION,
                "--model",
                model(format),
                "--gap-seconds",
                "60",
            ])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(String::from_utf8(output.stdout).unwrap(), expected.body);
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(
            stderr.contains(&format!("rules {}", Rules::bundled().version)),
            "the preview names the rules version: {stderr}"
        );
    }
}
