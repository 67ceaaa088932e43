//! Provider requests: equal inputs give equal bytes, the system blocks join to the composed
//! system text (preview = wire), user-slot notes go into the last user message and never into
//! the system text, and tools keep the toolset's canonical order.

#![allow(clippy::disallowed_methods)]

use promptstack_core::Agent;
use promptstack_core::provider::{Conversation, Format, RequestOptions, Rules};

use crate::support::{chat_agent as agent, chat_send as send, fresh_request};

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
            fresh_request(agent, &assembly, &options).unwrap()
        };
        let (a, b) = (build(&one), build(&two));
        assert_eq!(a.body, b.body, "{format:?}");
        // The spliced body is exactly the canonical serialisation of itself.
        assert_eq!(
            promptstack_core::provider::canonical_json(&a.body_value()),
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
    let error = fresh_request(&agent, &assembly, &options).unwrap_err();
    assert!(error.to_string().contains("nothing to send"), "{error}");
    let open = Conversation::from_json(
        br#"{"messages": [{"role": "user", "text": "hi"}, {"role": "assistant", "tool_calls": [{"id": "c1", "name": "search", "arguments": {}}]}]}"#,
        "c.json",
    )
    .unwrap();
    let error = agent
        .request(&assembly, &open, Rules::bundled(), &options)
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
    let request = fresh_request(&agent, &assembly, &options).unwrap();
    let body = request.body_value();
    assert_eq!(body["cachedContent"], "cachedContents/abc123");
    assert!(body.get("systemInstruction").is_none());
    assert!(body.get("tools").is_none());
    assert!(body["contents"].as_array().is_some_and(|c| !c.is_empty()));
    options.format = Format::Anthropic;
    assert!(fresh_request(&agent, &assembly, &options).is_err());
}

/// A conversation of exactly `count` messages in a repeating pattern: a question and an answer,
/// and on every third turn an answer that first calls two tools (one result a failure).
fn long_conversation(count: usize) -> Conversation {
    use promptstack_core::provider::{Message, ToolCall};
    let mut messages = Vec::with_capacity(count + 4);
    let mut turn = 0;
    while messages.len() < count {
        let room = count - messages.len();
        messages.push(Message::User {
            text: format!("Question {turn}: how high is hill {turn}?"),
        });
        if room == 1 {
            break;
        }
        if turn % 3 == 2 && room >= 5 {
            let (search, fetch) = (format!("call_{turn}_a"), format!("call_{turn}_b"));
            messages.push(Message::Assistant {
                text: if turn % 2 == 0 {
                    String::new()
                } else {
                    "Let me look.".into()
                },
                tool_calls: vec![
                    ToolCall {
                        id: search.clone(),
                        name: "search".into(),
                        arguments: serde_json::json!({"query": format!("hill {turn}")}),
                    },
                    ToolCall {
                        id: fetch.clone(),
                        name: "fetch_content".into(),
                        arguments: serde_json::json!({"url": format!("https://example.org/{turn}")}),
                    },
                ],
            });
            messages.push(Message::Tool {
                call_id: search,
                content: format!("[Source {turn}] hill {turn} is {} m high.", turn % 1000),
                is_error: false,
            });
            messages.push(Message::Tool {
                call_id: fetch,
                content: "the page could not be loaded".into(),
                is_error: true,
            });
        }
        messages.push(Message::Assistant {
            text: format!("Hill {turn} is about {} m high.", turn % 1000),
            tool_calls: Vec::new(),
        });
        turn += 1;
    }
    Conversation { messages }
}

fn model_of(format: Format) -> &'static str {
    match format {
        Format::Anthropic => "claude-sonnet-4-5",
        Format::Gemini => "gemini-2.5-flash",
        Format::OpenaiChat | Format::OpenaiResponses => "gpt-5.6",
    }
}

/// Every tool and message unit's pointer names the place in the body that holds exactly the
/// unit's canonical bytes (marked units carry their marker there, so they are compared without
/// it), and the units of the conversation are as many as its contents.
fn check_units(request: &promptstack_core::provider::Request) {
    use promptstack_core::provider::{Region, canonical_json};
    let body = request.body_value();
    let marked: Vec<usize> = request.plan.breakpoints.iter().map(|b| b.unit).collect();
    for (i, unit) in request.units.iter().enumerate() {
        if unit.region == Region::System || marked.contains(&i) {
            continue;
        }
        let at = body
            .pointer(&unit.at)
            .unwrap_or_else(|| panic!("{:?}: no `{}` in the body", request.format, unit.at));
        assert_eq!(
            canonical_json(at),
            unit.bytes,
            "{:?} {}",
            request.format,
            unit.at
        );
    }
}

/// The pointers of every unit hold on the examples' conversation in every format.
#[test]
fn unit_pointers_name_their_place_in_the_body() {
    let agent = agent();
    let ctx = send("research");
    let assembly = agent.assemble(&ctx).unwrap();
    let conversation = long_conversation(300);
    for format in Format::ALL {
        for explicit in [true, false] {
            let mut options = RequestOptions::new(format, "legacy");
            options.model = Some(if explicit { model_of(format) } else { "gpt-4o" }.into());
            if !explicit && format != Format::OpenaiChat && format != Format::OpenaiResponses {
                continue;
            }
            let request = agent
                .request(&assembly, &conversation, Rules::bundled(), &options)
                .unwrap();
            check_units(&request);
        }
    }
}

/// A 150,000-message conversation (the size that used to take minutes) goes through reading,
/// checking and building in every format, and its units are where they say they are.
#[test]
fn a_150k_message_conversation_builds_in_every_format() {
    let agent = agent();
    let ctx = send("research");
    let assembly = agent.assemble(&ctx).unwrap();
    let json = serde_json::to_vec(&long_conversation(150_000)).unwrap();
    let conversation = Conversation::from_json(&json, "long.json").unwrap();
    assert_eq!(conversation.messages.len(), 150_000);
    for format in Format::ALL {
        let mut options = RequestOptions::new(format, "legacy");
        options.model = Some(model_of(format).into());
        let request = agent
            .request(&assembly, &conversation, Rules::bundled(), &options)
            .unwrap();
        check_units(&request);
        let tail = request.units.last().unwrap();
        assert_eq!(
            tail.boundary,
            Some(promptstack_core::provider::Boundary::Tail)
        );
        assert!(tail.label.starts_with("message 150000: "), "{}", tail.label);
    }
}

/// A conversation over the message cap is refused at the first message past it, located; the
/// byte cap is checked before parsing; both can be changed.
#[test]
fn conversation_caps_are_located_and_adjustable() {
    use promptstack_core::provider::ConversationLimits;
    let json = serde_json::to_vec(&long_conversation(30)).unwrap();
    let limits = ConversationLimits::new().max_messages(10);
    let error = Conversation::from_json_with(&json, "c.json", &limits)
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("c.json:1:"), "{error}");
    assert!(
        error.contains("too many messages: the limit is 10") && error.ends_with("(at `messages`)"),
        "{error}"
    );
    let error = Conversation::from_json_with(&json, "c.json", &limits.max_bytes(100))
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        format!(
            "c.json: the conversation is {} bytes; the limit is 100",
            json.len()
        )
    );
    let limits = ConversationLimits::new().max_messages(30);
    assert_eq!(
        Conversation::from_json_with(&json, "c.json", &limits)
            .unwrap()
            .messages
            .len(),
        30
    );
}

/// One assistant message with many calls answered out of order: checking stays correct (the
/// earliest unanswered call is named) without rescanning the open calls.
#[test]
fn many_calls_in_one_message_are_checked_by_id() {
    use promptstack_core::provider::{Message, ToolCall};
    let calls: Vec<ToolCall> = (0..5000)
        .map(|i| ToolCall {
            id: format!("c{i}"),
            name: "search".into(),
            arguments: serde_json::json!({}),
        })
        .collect();
    let mut messages = vec![
        Message::User { text: "go".into() },
        Message::Assistant {
            text: String::new(),
            tool_calls: calls,
        },
    ];
    // Answer every call but c1, from the last to the first.
    for i in (0..5000).rev().filter(|i| *i != 1) {
        messages.push(Message::Tool {
            call_id: format!("c{i}"),
            content: "ok".into(),
            is_error: false,
        });
    }
    let mut conversation = Conversation { messages };
    conversation.messages.push(Message::User {
        text: "next".into(),
    });
    let error = conversation.check().unwrap_err().to_string();
    assert!(
        error.contains("messages[5001]: tool call `c1` has no result"),
        "{error}"
    );
    // Answering it twice is refused; answering it once makes the conversation whole.
    conversation.messages.pop();
    conversation.messages.push(Message::Tool {
        call_id: "c0".into(),
        content: "again".into(),
        is_error: false,
    });
    let error = conversation.check().unwrap_err().to_string();
    assert!(error.contains("answers no open call"), "{error}");
    conversation.messages.pop();
    conversation.messages.push(Message::Tool {
        call_id: "c1".into(),
        content: "ok".into(),
        is_error: false,
    });
    conversation.check().unwrap();
}
