//! What the front ends share (`promptstack::command` and the names of the core's option types):
//! every name parses back to its value the same way through `FromStr` and serde, an unknown name
//! is refused with the names accepted, and the defaults are the documented ones.

use std::fmt::Display;
use std::str::FromStr;

use promptstack::ErrorKind;
use promptstack::command::{RenderFormat, RequestSettings};
use promptstack::compose::{Slot, choose_target};
use promptstack::limits::{Limit, Limits};
use promptstack::provider::{DEFAULT_MAX_TOKENS, Format};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Each of `all` prints as `name`, parses back from it with `FromStr`, serialises to the JSON
/// string of the same name and deserialises back from it; the names are distinct.
fn round_trips<T>(all: &[T], name: fn(T) -> &'static str)
where
    T: Copy + PartialEq + std::fmt::Debug + Display + FromStr + Serialize + DeserializeOwned,
    T::Err: Display,
{
    let mut seen = std::collections::BTreeSet::new();
    for &value in all {
        let text = name(value);
        assert!(seen.insert(text), "{text} named twice");
        assert_eq!(value.to_string(), text);
        assert_eq!(text.parse::<T>().ok(), Some(value));
        let json = serde_json::to_string(&value).unwrap();
        assert_eq!(json, format!("\"{text}\""));
        assert_eq!(serde_json::from_str::<T>(&json).unwrap(), value);
    }
}

#[test]
fn every_name_round_trips_through_from_str_and_serde() {
    round_trips(&Format::ALL, Format::as_str);
    round_trips(&RenderFormat::ALL, RenderFormat::as_str);
    round_trips(&Slot::ALL, Slot::as_str);
}

#[test]
fn fence_kinds_and_cite_modes_are_named_once() {
    use promptstack::command::{CiteMode, FenceKind};
    use promptstack::fence::{ContentKind, FenceErrorKind};
    round_trips(&CiteMode::ALL, CiteMode::as_str);
    assert_eq!(CiteMode::default(), CiteMode::ALL[0]);
    assert_eq!(
        "markdown".parse::<CiteMode>().unwrap_err().to_string(),
        "mode \"markdown\" is not one of placeholders, links"
    );
    // A fence kind is named in a request by its content kind's short name, and parsed from it or
    // from the marker name; every content kind has one.
    for content in ContentKind::ALL {
        let kind = FenceKind::parse(content.short_name()).unwrap();
        assert_eq!(ContentKind::from(kind), content);
        assert_eq!(FenceKind::parse(content.marker_name()).unwrap(), kind);
        let json = format!("\"{}\"", content.short_name());
        assert_eq!(serde_json::from_str::<FenceKind>(&json).unwrap(), kind);
    }
    assert_eq!(FenceKind::ALL.len(), ContentKind::ALL.len());
    let unknown = FenceKind::parse("email").unwrap_err();
    assert_eq!(unknown.kind(), FenceErrorKind::UnknownKind);
    assert_eq!(unknown.kind().as_str(), "unknown-kind");
    assert_eq!(unknown, ContentKind::parse("email").unwrap_err());
}

#[test]
fn an_unknown_name_is_refused_with_the_names_accepted() {
    let error = "openai".parse::<Format>().unwrap_err();
    assert_eq!(
        error.to_string(),
        "format \"openai\" is not one of anthropic, openai-chat, openai-responses, gemini"
    );
    // `for_provider` keeps its aliases; the names themselves are exact.
    assert_eq!(Format::for_provider("openai"), Some(Format::OpenaiChat));
    assert!("Anthropic".parse::<Format>().is_err());
    let error = "body".parse::<RenderFormat>().unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("format \"body\" is not one of text, json, anthropic")
    );
    assert_eq!(
        "assistant".parse::<Slot>().unwrap_err().to_string(),
        "slot \"assistant\" is not one of system, user"
    );
}

#[test]
fn a_render_format_names_its_provider_format() {
    for format in RenderFormat::ALL {
        match format.provider() {
            Some(provider) => assert_eq!(provider.as_str(), format.as_str()),
            None => assert!(matches!(format, RenderFormat::Text | RenderFormat::Json)),
        }
    }
    assert_eq!(RenderFormat::default(), RenderFormat::Text);
    assert_eq!(Format::default(), Format::Anthropic);
    assert_eq!(Slot::default(), Slot::System);
}

#[test]
fn the_target_is_the_one_named_or_the_only_one() {
    assert_eq!(choose_target(["a", "b"], Some("b")).unwrap(), "b");
    assert_eq!(choose_target(["only"], None).unwrap(), "only");
    let several = choose_target(["a", "b"], None).unwrap_err();
    assert_eq!(
        several.message("choose one with --target"),
        "this spec has several targets (a, b); choose one with --target"
    );
    let none = choose_target([], None).unwrap_err();
    assert!(none.ids.is_empty());
}

#[test]
fn request_settings_fill_in_the_defaults_and_refuse_unknown_fields() {
    let settings: RequestSettings = serde_json::from_str("{}").unwrap();
    let options = settings.options(Format::Gemini, "t");
    assert_eq!(options.max_tokens, DEFAULT_MAX_TOKENS);
    assert_eq!(options.max_tokens, 4096);
    assert_eq!(
        (options.format, options.target.as_str()),
        (Format::Gemini, "t")
    );
    assert!(options.model.is_none() && options.cache_key.is_none());
    let settings: RequestSettings =
        serde_json::from_str(r#"{"max_tokens": 7, "model": "m", "gap_seconds": 9}"#).unwrap();
    let options = settings.options(Format::Anthropic, "t");
    assert_eq!(options.max_tokens, 7);
    assert_eq!(options.model.as_deref(), Some("m"));
    assert_eq!(options.expected_gap_seconds, Some(9));
    assert!(serde_json::from_str::<RequestSettings>(r#"{"max_token": 7}"#).is_err());
}

#[test]
fn the_conversation_is_bounded_by_the_limits() {
    let settings: RequestSettings = serde_json::from_str(
        r#"{"conversation": {"messages": [{"role": "user", "text": "a"},
            {"role": "assistant", "text": "b"}, {"role": "user", "text": "c"}]}}"#,
    )
    .unwrap();
    assert!(settings.conversation(&Limits::default()).is_ok());
    let mut limits = Limits::default();
    limits.set(Limit::ConversationMessages, 2).unwrap();
    let error = settings.conversation(&limits).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Request);
}

#[test]
fn every_error_kind_has_one_distinct_name() {
    let kinds = [
        ErrorKind::Render,
        ErrorKind::Gate,
        ErrorKind::TrailingUserText,
        ErrorKind::NotFound,
        ErrorKind::Context,
        ErrorKind::Manifest,
        ErrorKind::Rules,
        ErrorKind::Request,
    ];
    let names: std::collections::BTreeSet<&str> = kinds.iter().map(|k| k.as_str()).collect();
    assert_eq!(names.len(), kinds.len());
    assert_eq!(ErrorKind::NotFound.as_str(), "not-found");
    assert_eq!(
        ErrorKind::TrailingUserText.to_string(),
        "trailing-user-text"
    );
}

/// The chat-assistant example (three targets) and its research send.
fn example() -> (promptstack::Agent, promptstack::SendContext) {
    use promptstack::{Agent, SendContext, SpecFormat};
    let examples =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant");
    let read = |name: &str| std::fs::read(examples.join(name)).unwrap();
    let agent = Agent::from_source(&read("agent.toml"), "agent.toml", SpecFormat::Toml).unwrap();
    let send = SendContext::from_json(&read("sends/research.json"), "research.json").unwrap();
    (agent, send)
}

/// The example's research send, assembled, with the default limits: what the commands run over.
struct Example {
    agent: promptstack::Agent,
    send: promptstack::SendContext,
    assembly: promptstack::Assembly,
    limits: Limits,
}

impl Example {
    fn new() -> Example {
        let (agent, send) = example();
        let assembly = agent.assemble(&send).unwrap();
        Example {
            agent,
            send,
            assembly,
            limits: Limits::default(),
        }
    }

    fn on(&self) -> promptstack::command::Assembled<'_> {
        promptstack::command::Assembled {
            agent: &self.agent,
            send: &self.send,
            assembly: &self.assembly,
        }
    }

    fn env(&self) -> promptstack::command::Env<'_> {
        promptstack::command::Env::bundled(&self.limits)
    }
}

#[test]
fn render_answers_what_the_engine_composes_and_builds() {
    use promptstack::command::{self, Error, RenderRequest, Rendered};
    use promptstack::provider::{Conversation, Rules};
    let example = Example::new();
    let (on, env, limits) = (example.on(), example.env(), &example.limits);
    let Example {
        agent, assembly, ..
    } = &example;
    let render = |request: RenderRequest| command::render(&on, &request, &env);
    let cached = || RenderRequest {
        target: Some("cached".to_owned()),
        ..RenderRequest::default()
    };

    let text = render(cached()).unwrap();
    let composition = assembly.compose("cached").unwrap();
    assert_eq!(text.target.as_deref(), Some("cached"));
    assert!(matches!(&text.rendered, Rendered::Text(t) if *t == composition.system));

    let user = render(RenderRequest {
        slot: Slot::User,
        ..cached()
    })
    .unwrap();
    assert!(matches!(&user.rendered, Rendered::Text(t) if *t == composition.user));

    let all = render(RenderRequest {
        format: RenderFormat::Json,
        ..RenderRequest::default()
    })
    .unwrap();
    let Rendered::Compositions(compositions) = &all.rendered else {
        panic!("json renders compositions: {:?}", all.rendered);
    };
    let ids: Vec<&str> = compositions.iter().map(|c| c.target.as_str()).collect();
    assert_eq!(ids, assembly.target_ids().collect::<Vec<_>>());
    assert!(ids.len() > 1, "the example has several targets");

    let Err(Error::TargetRequired(several)) = render(RenderRequest::default()) else {
        panic!("text without a target of several is refused");
    };
    assert_eq!(several.ids, ids);

    let request = render(RenderRequest {
        format: RenderFormat::OpenaiChat,
        ..cached()
    })
    .unwrap();
    let built = agent
        .request(
            assembly,
            &Conversation::default(),
            Rules::bundled(),
            &RequestSettings::default().options(Format::OpenaiChat, "cached"),
        )
        .unwrap();
    assert!(matches!(&request.rendered, Rendered::Request(r) if r.body == built.body));

    let full_request = render(RenderRequest {
        format: RenderFormat::Anthropic,
        full: true,
        ..cached()
    });
    assert!(matches!(full_request, Err(Error::FullInProviderFormat)));

    let bad_conversation = RenderRequest {
        options: RequestSettings {
            conversation: Some(serde_json::json!({"x": 1})),
            ..RequestSettings::default()
        },
        ..cached()
    };
    assert!(matches!(
        bad_conversation.check(limits),
        Err(Error::Conversation(_))
    ));
    let unknown = render(RenderRequest {
        target: Some("nope".to_owned()),
        ..RenderRequest::default()
    });
    assert!(
        matches!(unknown, Err(Error::Engine(e)) if e.kind() == ErrorKind::NotFound),
        "an unknown target is the engine's not-found"
    );
}

#[test]
fn request_with_a_conversation_read_builds_what_request_builds_from_its_value() {
    use promptstack::command::{self, Error, RequestRequest, read_conversation};
    let example = Example::new();
    let (on, env, limits) = (example.on(), example.env(), &example.limits);
    let Example {
        agent, assembly, ..
    } = &example;
    let bytes = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../promptstack-cli/tests/data/conversations/tool-turn.json"),
    )
    .unwrap();
    let conversation = read_conversation(&bytes, "tool-turn.json", limits).unwrap();
    let read = RequestRequest {
        target: Some("cached".to_owned()),
        format: Format::OpenaiResponses,
        options: RequestSettings {
            max_tokens: Some(99),
            ..RequestSettings::default()
        },
    };
    let given = RequestRequest {
        options: RequestSettings {
            conversation: Some(serde_json::from_slice(&bytes).unwrap()),
            ..read.options.clone()
        },
        ..read.clone()
    };
    let with = command::request_with(agent, assembly, &read, &conversation, &env).unwrap();
    let from_value = command::request(&on, &given, &env).unwrap();
    assert_eq!(with.value.body, from_value.value.body);
    assert_eq!(with.value.target, "cached");
    assert!(
        with.value.body.contains("\"max_output_tokens\":99"),
        "{}",
        with.value.body
    );
    assert_eq!(with.diagnostics.len(), from_value.diagnostics.len());
    // The conversation in the options is not read: the one given is sent.
    let ignored =
        command::request_with(agent, assembly, &given, &Default::default(), &env).unwrap();
    assert_ne!(ignored.value.body, with.value.body);
    let several = RequestRequest {
        target: None,
        ..read
    };
    assert!(matches!(
        command::request_with(agent, assembly, &several, &conversation, &env),
        Err(Error::TargetRequired(_))
    ));
}

#[test]
fn diff_of_a_send_with_itself_finds_nothing_and_with_another_finds_the_divergence() {
    use promptstack::command::{self, Assembled, DiffRequest, Env};
    let (agent, send) = example();
    let examples =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant");
    let no_web = promptstack::SendContext::from_json(
        &std::fs::read(examples.join("sends/no-web.json")).unwrap(),
        "no-web.json",
    )
    .unwrap();
    let (assembly, assembly_b) = (
        agent.assemble(&send).unwrap(),
        agent.assemble(&no_web).unwrap(),
    );
    let on = Assembled {
        agent: &agent,
        send: &send,
        assembly: &assembly,
    };
    let on_b = Assembled {
        send: &no_web,
        assembly: &assembly_b,
        ..on
    };
    let limits = Limits::default();
    let env = Env::bundled(&limits);
    let request = DiffRequest {
        target: Some("cached".to_owned()),
        ..DiffRequest::default()
    };
    let same = command::diff(&on, &on, &request, &env).unwrap();
    assert!(same.is_same());
    assert_eq!(same.target, "cached");
    let other = command::diff(&on, &on_b, &request, &env).unwrap();
    assert!(
        !other.is_same(),
        "a send without web search composes otherwise"
    );
    assert!(
        matches!(
            command::diff(&on, &on_b, &DiffRequest::default(), &env),
            Err(command::Error::TargetRequired(_))
        ),
        "the target is chosen on the first side"
    );
}

#[test]
fn cache_sim_checks_its_options_and_simulates_the_target_chosen() {
    use promptstack::command::{self, CacheSimRequest, Env, Error, SimOption};
    use promptstack::provider::sim::SimCancel;
    let (agent, send) = example();
    let limits = Limits::default();
    let env = Env::bundled(&limits);
    let request = CacheSimRequest {
        turns: 3,
        ..CacheSimRequest::default()
    };
    let sends = [send];
    assert!(
        matches!(
            command::cache_sim(&agent, &sends, &request, &env, SimCancel::default()),
            Err(Error::TargetRequired(_))
        ),
        "the example has several targets"
    );
    let request = CacheSimRequest {
        target: Some("cached".to_owned()),
        ..request
    };
    let report = command::cache_sim(&agent, &sends, &request, &env, SimCancel::default()).unwrap();
    assert_eq!((report.target.as_str(), report.turns), ("cached", 3));
    for (request, option, message) in [
        (
            CacheSimRequest {
                turns: 0,
                ..CacheSimRequest::default()
            },
            SimOption::Turns,
            "turns must be between 1 and 1000 (the `sim-turns` limit), got 0",
        ),
        (
            CacheSimRequest {
                gap_seconds: u32::MAX,
                ..CacheSimRequest::default()
            },
            SimOption::GapSeconds,
            "gap_seconds must be at most 2592000 (30 days), got 4294967295",
        ),
        (
            CacheSimRequest {
                mcp_failure_rate: 1.5,
                ..CacheSimRequest::default()
            },
            SimOption::McpFailureRate,
            "mcp_failure_rate must be between 0 and 1, got 1.5",
        ),
    ] {
        let error =
            command::cache_sim(&agent, &sends, &request, &env, SimCancel::default()).unwrap_err();
        match &error {
            Error::OutOfRange(range) => assert_eq!(range.option, option),
            other => panic!("expected an option out of range, got {other:?}"),
        }
        assert_eq!(error.to_string(), message);
    }
}

#[test]
fn fence_wraps_and_checks_what_it_wrapped() {
    use promptstack::command::{self, Error, FenceKind, FenceRequest};
    let wrap = FenceRequest {
        text: "some page text".to_owned(),
        kind: Some(FenceKind::Page),
        origin: Some("https://example.com/a/b".to_owned()),
        ..FenceRequest::default()
    };
    let wrapped = command::fence(&wrap).unwrap();
    let text = wrapped.text.clone().unwrap();
    let nonce = wrapped.nonce.clone().unwrap();
    assert_eq!(text.matches(nonce.as_str()).count(), 2, "{text}");
    assert_eq!((wrapped.defanged, wrapped.valid), (Some(0), None));
    let checked = command::fence(&FenceRequest {
        text,
        check: true,
        ..FenceRequest::default()
    })
    .unwrap();
    assert_eq!(checked.valid, Some(true));
    assert_eq!(checked.problems, Some(Vec::new()));
    let info = checked.fence.unwrap();
    assert_eq!(info.origin.as_deref(), Some("https://example.com"));
    let json = serde_json::to_value(command::fence(&wrap).unwrap()).unwrap();
    assert_eq!(
        json.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["defanged", "text"],
        "the fence found is not serialised, nor the fields of the other mode"
    );
    let invalid = command::fence(&FenceRequest {
        text: "not a fence".to_owned(),
        check: true,
        ..FenceRequest::default()
    })
    .unwrap();
    assert_eq!(invalid.valid, Some(false));
    assert!(invalid.fence.is_none() && !invalid.problems.unwrap().is_empty());
    let without_kind = FenceRequest {
        kind: None,
        ..wrap.clone()
    };
    assert!(matches!(
        command::fence(&without_kind),
        Err(Error::FenceKindRequired)
    ));
    let without_origin = FenceRequest {
        origin: None,
        ..wrap
    };
    assert!(matches!(
        command::fence(&without_origin),
        Err(Error::Provenance(_))
    ));
}

#[test]
fn cite_bounds_the_map_only_when_it_is_kept() {
    use promptstack::command::{self, CiteMode, CiteRequest, Error};
    let sources: promptstack::stream::SourceSnapshot = serde_json::from_str(
        r#"{"sources": [{"index": 1, "url": "https://example.com/", "title": "Example"}]}"#,
    )
    .unwrap();
    let mut limits = Limits::default();
    limits.set(Limit::CiteRuns, 1).unwrap();
    let text = "One [1]. Two [1]. Three [1].";
    let run = |request: &CiteRequest| {
        let mut processor = command::cite(request, &limits).unwrap();
        let mut out = String::new();
        processor.push_into(text, &mut out);
        processor.finish_into(&mut out);
        (out, processor.overflow().is_some())
    };
    let kept = CiteRequest {
        sources,
        map: true,
        ..CiteRequest::default()
    };
    assert!(run(&kept).1, "a kept map holds at most `cite-runs` runs");
    let (out, overflow) = run(&CiteRequest {
        map: false,
        ..kept.clone()
    });
    assert!(!overflow && out.contains("{{cite:"), "{out}");
    let (links, _) = run(&CiteRequest {
        mode: CiteMode::Links,
        map: false,
        ..kept.clone()
    });
    assert!(links.contains("](https://example.com/"), "{links}");
    let widgets = CiteRequest {
        widgets: vec!["not a name!".to_owned()],
        ..kept
    };
    assert!(matches!(
        command::cite(&widgets, &limits),
        Err(Error::Widgets(_))
    ));
}

#[test]
fn render_full_renders_what_render_renders_with_full_without_an_assembly() {
    use promptstack::command::{self, Env, Error, RenderFormat, RenderRequest, Rendered};
    let example = Example::new();
    let (on, limits) = (example.on(), &example.limits);
    let Example { agent, send, .. } = &example;
    let request = RenderRequest {
        target: Some("cached".to_owned()),
        full: true,
        ..RenderRequest::default()
    };
    let full = command::render_full(agent, send, &request).unwrap();
    let rendered = command::render(&on, &request, &Env::bundled(limits)).unwrap();
    assert_eq!(rendered.diagnostics, full.warnings);
    match rendered.rendered {
        Rendered::Full(by_render) => assert_eq!(by_render.text, full.text),
        other => panic!("expected the full prompt, got {other:?}"),
    }
    let in_a_provider_format = RenderRequest {
        format: RenderFormat::Anthropic,
        ..request
    };
    assert!(matches!(
        command::render_full(agent, send, &in_a_provider_format),
        Err(Error::FullInProviderFormat)
    ));
}
