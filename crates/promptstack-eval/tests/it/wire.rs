//! Reading streamed answers from the wire: four formats' recorded bodies, every way of cutting
//! them into chunks, and hostile bodies.

use promptstack_eval::row::{ToolCallRecord, Usage};
use promptstack_eval::wire::{
    Answer, Event, MAX_EVENT_BYTES, SseDecoder, Stream, StreamFormat, WireError,
};
use proptest::prelude::*;

const OPENAI: &[u8] = include_bytes!("wire/openai-chat.sse");
const ANTHROPIC: &[u8] = include_bytes!("wire/anthropic.sse");
const RESPONSES: &[u8] = include_bytes!("wire/openai-responses.sse");
const GEMINI: &[u8] = include_bytes!("wire/gemini.sse");

const ALL: [(StreamFormat, &[u8]); 4] = [
    (StreamFormat::OpenaiChat, OPENAI),
    (StreamFormat::Anthropic, ANTHROPIC),
    (StreamFormat::OpenaiResponses, RESPONSES),
    (StreamFormat::Gemini, GEMINI),
];

fn read(format: StreamFormat, body: &[u8], cuts: &[usize]) -> Result<(Answer, String), WireError> {
    let mut stream = Stream::new(format);
    let mut streamed = String::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([&body.len()]) {
        let cut = cut.clamp(from, body.len());
        streamed.push_str(stream.feed(&body[from..cut])?);
        from = cut;
    }
    Ok((stream.finish()?, streamed))
}

/// Three of the recordings carry the same answer, each in its own format (a text with a
/// citation and characters outside ASCII, two tool calls, cache reads; Gemini's output tokens
/// count its thoughts): it is read whole, streamed as it comes, with the format's stop reason.
fn reads_the_shared_answer(format: StreamFormat, body: &[u8], stop_reason: &str) {
    let (answer, streamed) = read(format, body, &[]).unwrap();
    assert_eq!(answer.text, "Rust 1.95 is out [1]. 中文 🚀");
    assert_eq!(streamed, answer.text);
    assert_eq!(
        answer.tool_calls,
        [
            ToolCallRecord::new("search", r#"{"query":"rust"}"#),
            ToolCallRecord::new("get_tasks", "{}"),
        ]
    );
    assert_eq!(
        answer.usage,
        Usage {
            input_tokens: 1200,
            output_tokens: 48,
            cache_read_tokens: Some(1024),
            cache_write_tokens: None,
        }
    );
    assert_eq!(answer.stop_reason.as_deref(), Some(stop_reason));
}

#[test]
fn an_openai_chat_stream() {
    reads_the_shared_answer(StreamFormat::OpenaiChat, OPENAI, "tool_calls");
}

#[test]
fn an_anthropic_stream_with_cache_tokens_added_into_the_input() {
    let (answer, _) = read(StreamFormat::Anthropic, ANTHROPIC, &[]).unwrap();
    assert_eq!(answer.text, "Rust 1.95 is out 【1】.");
    assert_eq!(
        answer.tool_calls,
        [ToolCallRecord::new("search", r#"{"query": "rust"}"#)]
    );
    assert_eq!(
        answer.usage,
        Usage {
            input_tokens: 1320,
            output_tokens: 52,
            cache_read_tokens: Some(300),
            cache_write_tokens: Some(1000),
        }
    );
    assert_eq!(answer.stop_reason.as_deref(), Some("tool_use"));
}

#[test]
fn an_openai_responses_stream() {
    reads_the_shared_answer(StreamFormat::OpenaiResponses, RESPONSES, "completed");
}

#[test]
fn a_gemini_stream_counts_thoughts_as_output() {
    reads_the_shared_answer(StreamFormat::Gemini, GEMINI, "STOP");
}

#[test]
fn cache_fields_are_absent_when_the_provider_says_nothing() {
    let bodies: [(StreamFormat, &[u8], &str, &str); 2] = [
        (
            StreamFormat::OpenaiResponses,
            b"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":7,\"output_tokens\":3}}}\n\n",
            "",
            "max_output_tokens",
        ),
        (
            StreamFormat::Gemini,
            b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hi\"}]},\"finishReason\":\"MAX_TOKENS\"}],\"usageMetadata\":{\"promptTokenCount\":7,\"candidatesTokenCount\":3}}\n\n",
            "hi",
            "MAX_TOKENS",
        ),
    ];
    for (format, body, text, stop_reason) in bodies {
        let (answer, _) = read(format, body, &[]).unwrap();
        assert_eq!(answer.text, text, "{format:?}");
        assert_eq!(
            answer.usage,
            Usage {
                input_tokens: 7,
                output_tokens: 3,
                ..Usage::default()
            },
            "{format:?}"
        );
        assert_eq!(
            answer.stop_reason.as_deref(),
            Some(stop_reason),
            "{format:?}"
        );
    }
}

#[test]
fn a_gemini_stream_whose_last_chunk_has_no_finish_reason_is_truncated() {
    let finished = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"STOP\"}]}\n\n";
    let more = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"b\"}]}}]}\n\n";
    let usage = "data: {\"usageMetadata\":{\"promptTokenCount\":2,\"candidatesTokenCount\":1}}\n\n";
    let body = format!("{finished}{more}");
    assert_eq!(
        read(StreamFormat::Gemini, body.as_bytes(), &[]).unwrap_err(),
        WireError::Truncated
    );
    // Usage alone after the last chunk keeps the answer whole.
    let body = format!("{finished}{usage}");
    let (answer, _) = read(StreamFormat::Gemini, body.as_bytes(), &[]).unwrap();
    assert_eq!((answer.text.as_str(), answer.usage.input_tokens), ("a", 2));
    // A refused prompt has no candidates: its block reason is why the model stopped.
    let body = b"data: {\"promptFeedback\":{\"blockReason\":\"SAFETY\"},\"usageMetadata\":{\"promptTokenCount\":9}}\n\n";
    let (answer, _) = read(StreamFormat::Gemini, body, &[]).unwrap();
    assert_eq!(answer.stop_reason.as_deref(), Some("SAFETY"));
    assert_eq!(answer.text, "");
}

#[test]
fn stream_formats_follow_the_suite_formats() {
    use promptstack_eval::suite::ModelFormat;
    for (model, stream) in [
        (ModelFormat::OpenaiChat, StreamFormat::OpenaiChat),
        (ModelFormat::Anthropic, StreamFormat::Anthropic),
        (ModelFormat::OpenaiResponses, StreamFormat::OpenaiResponses),
        (ModelFormat::Gemini, StreamFormat::Gemini),
    ] {
        assert_eq!(StreamFormat::from(model), stream);
    }
}

#[test]
fn a_stream_cut_before_its_last_event_is_truncated() {
    for (format, body) in ALL {
        // Without its final blank line, the last event may be cut short: it is not read.
        let cut = &body[..body.len() - 2];
        assert_eq!(read(format, cut, &[]).unwrap_err(), WireError::Truncated);
        assert_eq!(
            read(format, &body[..body.len() / 2], &[]).unwrap_err(),
            WireError::Truncated
        );
    }
}

#[test]
fn provider_errors_inside_the_stream_are_errors() {
    let errors: [(StreamFormat, &[u8], &str); 5] = [
        (
            StreamFormat::Anthropic,
            b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            "Overloaded",
        ),
        (
            StreamFormat::OpenaiChat,
            b"data: {\"error\":{\"message\":\"rate limited\"}}\n\n",
            "rate limited",
        ),
        (
            StreamFormat::OpenaiResponses,
            b"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"the model failed\"}}}\n\n",
            "the model failed",
        ),
        (
            StreamFormat::OpenaiResponses,
            b"event: error\ndata: {\"type\":\"error\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow down\",\"param\":null}\n\n",
            "slow down",
        ),
        (
            StreamFormat::Gemini,
            b"data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":\"UNAVAILABLE\"}}\n\n",
            "The model is overloaded.",
        ),
    ];
    for (format, body, message) in errors {
        assert_eq!(
            read(format, body, &[]).unwrap_err(),
            WireError::Provider(message.into()),
            "{format:?}"
        );
    }
    let body = b"data: {not json\n\n";
    assert!(matches!(
        read(StreamFormat::OpenaiChat, body, &[]),
        Err(WireError::BadEvent(_))
    ));
}

#[test]
fn the_event_grammar() {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    decoder
        .feed(
            b"\xEF\xBB\xBFdata: a\r\ndata:b\rdata\n: comment\nevent: x\nid: 7\n\nevent: y\n\n",
            &mut events,
        )
        .unwrap();
    assert_eq!(
        events,
        [Event {
            name: "x".into(),
            data: "a\nb\n".into()
        }],
        "data lines join, an event without data is not dispatched"
    );
}

#[test]
fn an_event_past_its_bound_is_refused_without_holding_it() {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    let chunk = vec![b'x'; 64 * 1024];
    let mut result = decoder.feed(b"data: ", &mut events);
    let mut fed = 0;
    while result.is_ok() && fed <= MAX_EVENT_BYTES {
        result = decoder.feed(&chunk, &mut events);
        fed += chunk.len();
    }
    assert_eq!(result, Err(WireError::TooLarge("event")));
    // Many data lines add up to the same bound.
    let mut decoder = SseDecoder::new();
    let line = format!("data: {}\n", "y".repeat(1000));
    let mut result = Ok(());
    for _ in 0..2000 {
        result = decoder.feed(line.as_bytes(), &mut events);
        if result.is_err() {
            break;
        }
    }
    assert_eq!(result, Err(WireError::TooLarge("event")));
    assert!(events.is_empty());
}

#[test]
fn too_many_tool_calls_are_refused() {
    let mut body = String::new();
    for index in 0..300 {
        body.push_str(&format!(
            "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"name\":\"t\",\"arguments\":\"{{}}\"}}}}]}}}}]}}\n\n"
        ));
    }
    assert_eq!(
        read(StreamFormat::OpenaiChat, body.as_bytes(), &[]).unwrap_err(),
        WireError::TooLarge("tool calls")
    );
}

#[test]
fn too_many_gemini_calls_are_refused() {
    let part = r#"{"functionCall":{"name":"t","args":{}}}"#;
    let parts = vec![part; 300].join(",");
    let body = format!(
        "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{parts}]}},\"finishReason\":\"STOP\"}}]}}\n\n"
    );
    assert_eq!(
        read(StreamFormat::Gemini, body.as_bytes(), &[]).unwrap_err(),
        WireError::TooLarge("tool calls")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// However the bytes are cut (inside a CRLF, inside a UTF-8 character), the answer and the
    /// text streamed are the same.
    #[test]
    fn chunking_does_not_change_the_answer(cuts in proptest::collection::vec(0usize..10_000, 0..40)) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        for (format, body) in ALL {
            // The cuts are spread over each body, whatever its length.
            let cuts: Vec<usize> = cuts.iter().map(|cut| cut * body.len() / 10_000).collect();
            let whole = read(format, body, &[]).unwrap();
            prop_assert_eq!(read(format, body, &cuts).unwrap(), whole);
        }
    }

    /// Any bytes: an answer or an error, never a panic.
    #[test]
    fn any_body_is_read_or_refused(body in proptest::collection::vec(any::<u8>(), 0..600)) {
        for (format, _) in ALL {
            let _ = read(format, &body, &[body.len() / 3]);
        }
    }
}
