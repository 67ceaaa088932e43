//! The sampling fields: what a run adds to the body `render --format` prints.
//!
//! Preview = wire holds for evals up to exactly these fields. The request is rendered as
//! `promptstack render SPEC --send SEND --format FORMAT --model MODEL --max-tokens N` renders it
//! (the suite's `max_tokens`, else the render default, is the request builder's own output limit,
//! in each format's own field), and then [`add_sampling`] adds, in each format's place:
//!
//! | format | streaming | `temperature` | `seed` |
//! |---|---|---|---|
//! | `openai-chat` | `stream: true`, `stream_options: {include_usage: true}` | `temperature` | `seed` |
//! | `anthropic` | `stream: true` (usage always streams) | `temperature` | not sent (none taken) |
//! | `openai-responses` | `stream: true` (usage is in the last event) | `temperature` | not sent (none taken) |
//! | `gemini` | none in the body (streaming is the `:streamGenerateContent?alt=sse` call) | `generationConfig.temperature` | `generationConfig.seed` |
//!
//! A field the suite does not set is not sent, so the model's own default applies.

use promptstack_core::provider::Format;
use serde_json::{Map, Value};

/// The sampling settings of a run (the suite's `matrix`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sampling {
    /// The sampling temperature.
    pub temperature: Option<f64>,
    /// The sampling seed, sent to the formats that take one.
    pub seed: Option<u64>,
}

/// Adds the streaming and sampling fields of `format` to a rendered request body. A body that
/// is not a JSON object is left as it is (the request builder only writes objects).
pub fn add_sampling(body: &mut Value, format: Format, sampling: &Sampling) {
    let Some(object) = body.as_object_mut() else {
        return;
    };
    let temperature = sampling
        .temperature
        .and_then(serde_json::Number::from_f64)
        .map(Value::Number);
    match format {
        Format::OpenaiChat => {
            object.insert("stream".into(), Value::Bool(true));
            let mut options = Map::new();
            options.insert("include_usage".into(), Value::Bool(true));
            object.insert("stream_options".into(), Value::Object(options));
            if let Some(temperature) = temperature {
                object.insert("temperature".into(), temperature);
            }
            if let Some(seed) = sampling.seed {
                object.insert("seed".into(), Value::from(seed));
            }
        }
        Format::Anthropic | Format::OpenaiResponses => {
            object.insert("stream".into(), Value::Bool(true));
            if let Some(temperature) = temperature {
                object.insert("temperature".into(), temperature);
            }
        }
        Format::Gemini => {
            if temperature.is_none() && sampling.seed.is_none() {
                return;
            }
            let config = object
                .entry("generationConfig")
                .or_insert_with(|| Value::Object(Map::new()));
            if !config.is_object() {
                *config = Value::Object(Map::new());
            }
            if let Some(config) = config.as_object_mut() {
                if let Some(temperature) = temperature {
                    config.insert("temperature".into(), temperature);
                }
                if let Some(seed) = sampling.seed {
                    config.insert("seed".into(), Value::from(seed));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with(format: Format, sampling: Sampling, body: Value) -> Value {
        let mut body = body;
        add_sampling(&mut body, format, &sampling);
        body
    }

    const ALL: Sampling = Sampling {
        temperature: Some(0.5),
        seed: Some(7),
    };

    #[test]
    fn each_format_gets_its_fields_in_its_place() {
        assert_eq!(
            with(Format::OpenaiChat, ALL, json!({"model": "m"})),
            json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "temperature": 0.5, "seed": 7})
        );
        assert_eq!(
            with(Format::Anthropic, ALL, json!({"max_tokens": 10})),
            json!({"max_tokens": 10, "stream": true, "temperature": 0.5})
        );
        assert_eq!(
            with(Format::OpenaiResponses, ALL, json!({})),
            json!({"stream": true, "temperature": 0.5})
        );
        assert_eq!(
            with(
                Format::Gemini,
                ALL,
                json!({"generationConfig": {"maxOutputTokens": 10}})
            ),
            json!({"generationConfig": {"maxOutputTokens": 10, "temperature": 0.5, "seed": 7}})
        );
    }

    #[test]
    fn unset_fields_are_not_sent() {
        let none = Sampling::default();
        assert_eq!(
            with(Format::OpenaiChat, none, json!({})),
            json!({"stream": true, "stream_options": {"include_usage": true}})
        );
        assert_eq!(
            with(Format::Anthropic, none, json!({})),
            json!({"stream": true})
        );
        assert_eq!(
            with(Format::Gemini, none, json!({"contents": []})),
            json!({"contents": []})
        );
        // Only the seed: Gemini makes the config it lacks.
        assert_eq!(
            with(
                Format::Gemini,
                Sampling {
                    temperature: None,
                    seed: Some(1)
                },
                json!({})
            ),
            json!({"generationConfig": {"seed": 1}})
        );
    }

    #[test]
    fn a_body_that_is_not_an_object_is_left_alone() {
        assert_eq!(with(Format::OpenaiChat, ALL, json!([1])), json!([1]));
    }
}
