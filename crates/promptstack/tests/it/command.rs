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
