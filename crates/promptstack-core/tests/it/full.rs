//! The full prompt: tool and component tokens, empty-variable and unresolved-token warnings, and
//! rendering that fails loudly.

use promptstack_core::{Agent, ErrorKind, SpecFormat};
use serde_json::json;

use crate::injections::send;

const SPEC: &str = r#"
spec_version = 1
name = "tokens"

[variables.name]
stability = "stable"
trust = "user"
default = ""

[variables.profile]
stability = "stable"
trust = "platform"
default = {}

[[tools]]
name = "lookup"
description = "Looks things up. Use it for facts. On failure, say so."

[[tools]]
name = "book"
description = "Books a slot. Use it when asked. On failure, say so."
when = "settings.booking | default(false)"

[[blocks]]
id = "intro"
trust = "user"
stability = "stable"
template = "Hello {{ variables.name }}. Use {{TOOL:lookup}} for facts{% if true %} and {{TOOL:book}} for slots{% endif %}."

[[blocks]]
id = "steps"
trust = "author"
stability = "stable"
text = "Before answering {{COMPONENT:checklist}} then reply. Sign as {{COMPONENT:signature}}. {{COMPONENT:nowhere}}"

[components]
checklist = """
- read the question twice,
- check the facts"""
signature = "the help desk"

[stage]
capabilities = ["end_session"]

[targets.main]
system = ["@body"]

[targets.other]
system = ["@stable"]
"#;

fn agent() -> Agent {
    Agent::from_source(SPEC.as_bytes(), "tokens.toml", SpecFormat::Toml).unwrap()
}

#[test]
fn tokens_expand_in_templates_and_text_with_warnings_for_what_is_missing() {
    let agent = agent();
    let ctx = send(json!({}));
    let assembly = agent.assemble(&ctx).unwrap();
    assert_eq!(
        assembly.block("intro").unwrap().text,
        "Hello . Use `lookup` for facts and {{TOOL:book}} for slots."
    );
    assert_eq!(
        assembly.block("steps").unwrap().text,
        "Before answering\n- read the question twice,\n- check the facts\nthen reply. Sign as the help desk. {{COMPONENT:nowhere}}"
    );
    let codes: Vec<&str> = assembly.diagnostics().map(|d| d.code).collect();
    for code in [
        "empty-variable",
        "unresolved-tool-token",
        "unknown-component",
    ] {
        assert!(codes.contains(&code), "{code}: {codes:?}");
    }
    // Once the tool is offered, its token resolves and the warning goes away.
    let ctx = send(json!({"settings": {"booking": true}, "variables": {"name": "Ada"}}));
    let assembly = agent.assemble(&ctx).unwrap();
    assert_eq!(
        assembly.block("intro").unwrap().text,
        "Hello Ada. Use `lookup` for facts and `book` for slots."
    );
    assert!(
        !assembly
            .diagnostics()
            .any(|d| d.code == "unresolved-tool-token")
    );
}

#[test]
fn the_full_prompt_is_the_composed_text_with_every_append_and_the_warnings() {
    let agent = agent();
    let ctx = send(json!({}));
    let full = agent.render_full(&ctx, Some("main")).unwrap();
    let composed = agent.assemble(&ctx).unwrap().compose("main").unwrap();
    assert_eq!(full.text, composed.system);
    let ids: Vec<&str> = full.parts.iter().map(|p| &*p.id).collect();
    assert_eq!(
        ids,
        [
            "intro",
            "steps",
            "capability.end_session",
            "tenant_instructions",
            "tenant_instructions.end",
            "platform_context"
        ]
    );
    let codes: Vec<&str> = full.warnings.iter().map(|d| d.code).collect();
    assert!(codes.contains(&"empty-variable") && codes.contains(&"unresolved-tool-token"));
    // Several targets and none named: the caller must choose.
    assert_eq!(
        agent.render_full(&ctx, None).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn a_rendering_failure_is_an_error_never_a_different_text() {
    let spec = SPEC.replace(
        "Hello {{ variables.name }}.",
        "Hello {{ variables.profile.name.first }}.",
    );
    let agent = Agent::from_source(spec.as_bytes(), "tokens.toml", SpecFormat::Toml).unwrap();
    let err = agent
        .render_full(&send(json!({})), Some("main"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Render);
}
