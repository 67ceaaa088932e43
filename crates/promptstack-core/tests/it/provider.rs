//! Provider requests: equal inputs give equal bytes, the system blocks join to the composed
//! system text (preview = wire), user-slot notes go into the last user message and never into
//! the system text, and tools keep the toolset's canonical order.

#![allow(clippy::disallowed_methods)]

use std::path::Path;

use promptstack_core::provider::{Conversation, Format, RequestOptions, Rules};
use promptstack_core::{Agent, SendContext, SpecFormat};

fn agent() -> Agent {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant/agent.toml");
    Agent::from_source(
        &std::fs::read(&path).unwrap(),
        "agent.toml",
        SpecFormat::Toml,
    )
    .unwrap()
}

fn send(name: &str) -> SendContext {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../examples/chat-assistant/sends/{name}.json"));
    SendContext::from_json(&std::fs::read(&path).unwrap(), name).unwrap()
}

#[test]
fn equal_inputs_give_equal_bytes_and_notes_go_to_the_user_message() {
    let ctx = send("research");
    let (one, two) = (agent(), agent());
    for format in Format::ALL {
        let mut options = RequestOptions::new(format, "legacy");
        options.model = Some(match format {
            Format::Anthropic => "claude-sonnet-4-5".into(),
            Format::Gemini => "gemini-2.5-flash".into(),
            _ => "gpt-5.6".into(),
        });
        let build = |agent: &Agent| {
            let assembly = agent.assemble(&ctx).unwrap();
            agent
                .request(
                    &ctx,
                    &assembly,
                    &Conversation::default(),
                    Rules::bundled(),
                    &options,
                )
                .unwrap()
        };
        let (a, b) = (build(&one), build(&two));
        assert_eq!(a.body, b.body, "{format:?}");
        // The spliced body is exactly the canonical serialisation of itself.
        assert_eq!(
            promptstack_core::provider::canonical::to_string(&a.body_value()),
            a.body
        );
        let composition = one.assemble(&ctx).unwrap().compose("legacy").unwrap();
        assert!(!composition.user.is_empty());
        let body = a.body_value();
        // The system text as sent, joined from its blocks or parts.
        let system: String = match format {
            Format::Anthropic => body["system"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b["text"].as_str().unwrap())
                .collect(),
            Format::OpenaiChat => body["messages"][0]["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["text"].as_str().unwrap())
                .collect(),
            Format::OpenaiResponses => body["input"][0]["content"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["text"].as_str().unwrap())
                .collect(),
            Format::Gemini => body["systemInstruction"]["parts"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned(),
        };
        assert_eq!(system, composition.system, "{format:?}");
        assert!(!system.contains(&composition.user));
        let last_user = a.user_message.clone().unwrap();
        assert!(last_user.starts_with(&composition.user));
        assert!(last_user.ends_with(ctx.user_message.as_deref().unwrap()));
        assert!(a.body.contains(&serde_json::to_string(&last_user).unwrap()));
        // Tools in canonical order.
        let names: Vec<String> = a
            .units
            .iter()
            .filter(|u| u.region == promptstack_core::provider::Region::Tools)
            .map(|u| u.label.clone())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        assert!(!names.is_empty());
    }
}

#[test]
fn bad_requests_are_errors() {
    let agent = agent();
    let mut ctx = send("plain");
    ctx.user_message = None;
    let assembly = agent.assemble(&ctx).unwrap();
    let options = RequestOptions::new(Format::Anthropic, "legacy");
    let error = agent
        .request(
            &ctx,
            &assembly,
            &Conversation::default(),
            Rules::bundled(),
            &options,
        )
        .unwrap_err();
    assert!(error.to_string().contains("nothing to send"), "{error}");
    let open = Conversation::from_json(
        br#"{"messages": [{"role": "user", "text": "hi"}, {"role": "assistant", "tool_calls": [{"id": "c1", "name": "search", "arguments": {}}]}]}"#,
        "c.json",
    )
    .unwrap();
    let error = agent
        .request(&ctx, &assembly, &open, Rules::bundled(), &options)
        .unwrap_err();
    assert!(error.to_string().contains("needs a result"), "{error}");
    let error = Conversation::from_json(
        br#"{"messages": [{"role": "tool", "call_id": "nope", "content": "x"}]}"#,
        "c.json",
    )
    .unwrap_err();
    assert!(error.to_string().contains("messages[0]"), "{error}");
    let error =
        Conversation::from_json(br#"{"messages": [{"role": "usr", "text": "x"}]}"#, "c.json")
            .unwrap_err();
    assert!(error.to_string().starts_with("c.json:1:"), "{error}");
}

/// With an explicit Gemini cached content, the request names it and omits the system text and
/// the tools, which the cached content holds; other formats refuse the option.
#[test]
fn gemini_cached_content_omits_system_and_tools() {
    let agent = agent();
    let ctx = send("research");
    let assembly = agent.assemble(&ctx).unwrap();
    let mut options = RequestOptions::new(Format::Gemini, "legacy");
    options.cached_content = Some("cachedContents/abc123".into());
    let request = agent
        .request(
            &ctx,
            &assembly,
            &Conversation::default(),
            Rules::bundled(),
            &options,
        )
        .unwrap();
    let body = request.body_value();
    assert_eq!(body["cachedContent"], "cachedContents/abc123");
    assert!(body.get("systemInstruction").is_none());
    assert!(body.get("tools").is_none());
    assert!(body["contents"].as_array().is_some_and(|c| !c.is_empty()));
    options.format = Format::Anthropic;
    assert!(
        agent
            .request(
                &ctx,
                &assembly,
                &Conversation::default(),
                Rules::bundled(),
                &options
            )
            .is_err()
    );
}
