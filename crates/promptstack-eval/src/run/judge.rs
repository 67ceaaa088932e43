//! Judging `rubric` assertions: a judge model scores the row's answer against the rubric.
//!
//! The judge's prompt is an agent of its own ([`SPEC`], bundled), compiled once per runner: its
//! stable kernel explains the task and the reply's shape, and one untrusted note places the
//! rubric, the scenario's user message and the answer, each between tags and XML-escaped, in the
//! user turn. Its request is rendered as any scenario request (the body `render --format`
//! prints, then the sampling fields with temperature 0 and the suite's seed) and sent to the
//! judge model's endpoint with the row's repetition, so recordings key on it like any other
//! exchange. The judge's usage is not counted in the row's.

use promptstack_core::provider::{Conversation, RequestOptions, canonical_json};
use promptstack_core::{Agent, SendContext, SpecFormat};

use super::script::clip;
use super::{RunError, RunErrorKind, Runner, Sampling, add_sampling, fatal};
use crate::row::{AssertionResult, Verdict};
use crate::wire::Stream;

/// The judge's spec.
pub(super) const SPEC: &str = include_str!("judge.toml");

/// The target of [`SPEC`] every judge request is rendered for.
const TARGET: &str = "judge";

/// The user message of every judge request: what to do with the parts above it.
const CLOSER: &str = "Score the answer against the rubric. Reply with the JSON object only.";

/// The longest judge reply text a verdict's reason quotes.
const QUOTED: usize = 300;

/// One `rubric` assertion of a scenario.
#[derive(Debug, Clone)]
pub(super) struct Rubric {
    pub judge: String,
    pub rubric: String,
    pub threshold: f64,
}

/// The judge's agent.
pub(super) fn agent() -> Result<Agent, String> {
    Agent::from_source(SPEC.as_bytes(), "judge.toml", SpecFormat::Toml)
        .map_err(|e| format!("the bundled judge spec does not compile: {e}"))
}

/// A judge's reply read as `{"score": 0..1, "reason": "…"}`: the object alone, or in one fenced
/// block, whitespace around either.
pub(super) fn parse_reply(text: &str) -> Result<(f64, String), String> {
    let trimmed = text.trim();
    let inner = match trimmed.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.strip_prefix("json").unwrap_or(rest);
            let Some(rest) = rest.strip_suffix("```") else {
                return Err("an unclosed code fence".into());
            };
            rest.trim()
        }
        None => trimmed,
    };
    let value: serde_json::Value =
        serde_json::from_str(inner).map_err(|e| format!("not one JSON object ({e})"))?;
    let Some(object) = value.as_object() else {
        return Err("not a JSON object".into());
    };
    let score = object
        .get("score")
        .and_then(serde_json::Value::as_f64)
        .ok_or("no numeric `score`")?;
    if !(0.0..=1.0).contains(&score) {
        return Err(format!("`score` {score} is outside 0 to 1"));
    }
    let reason = match object.get("reason") {
        Some(serde_json::Value::String(reason)) => reason.trim().to_owned(),
        None => String::new(),
        Some(_) => return Err("`reason` is not a string".into()),
    };
    Ok((score, reason))
}

impl Runner {
    /// Judges assertion `index` of a row: `pass` when the judge's score reaches the threshold,
    /// `fail` below it, `error` when the judge cannot be asked or its reply cannot be read.
    ///
    /// # Errors
    ///
    /// An endpoint error every run would meet (see `fatal`): the run stops.
    pub(super) async fn judge_one(
        &self,
        index: usize,
        rubric: &Rubric,
        question: &str,
        answer: &str,
        whom: &str,
        repetition: u32,
    ) -> Result<AssertionResult, RunError> {
        let result = |verdict, reason: String| {
            AssertionResult::new(format!("{index}:rubric"), "rubric", verdict, reason)
        };
        let error =
            |why: String| result(Verdict::Error, format!("judge `{}`: {why}", rubric.judge));
        let Some(model) = self.judges.get(&rubric.judge) else {
            return Ok(error("no endpoint for the judge".into()));
        };
        let send = serde_json::json!({
            // A fixed moment: the judge's request must not change between runs, or a recorded
            // judgement would never replay.
            "now": "2026-01-01T00:00:00Z",
            "model": {
                "id": model.model,
                "name": model.name,
                "provider": model.format.as_str(),
                "tool_usage": "native",
            },
            // The send's own message closes the user turn with a fixed instruction, after the
            // untrusted note.
            "user_message": CLOSER,
            "variables": {
                "rubric": rubric.rubric,
                "question": question,
                "answer": answer,
            },
        });
        let bytes = serde_json::to_vec(&send).map_err(|e| RunError::input(e.to_string()))?;
        let request = SendContext::from_json_for(&bytes, "judge send", self.judge.spec())
            .map_err(|e| e.to_string())
            .and_then(|send| self.judge.assemble(&send).map_err(|e| e.to_string()))
            .and_then(|assembly| {
                let mut options = RequestOptions::new(model.format, TARGET.to_owned());
                options.model = Some(model.model.clone());
                options.max_tokens = self.max_tokens;
                self.judge
                    .request(&assembly, &Conversation::default(), &self.rules, &options)
                    .map_err(|e| e.to_string())
            });
        let request = match request {
            Ok(request) => request,
            Err(why) => return Ok(error(format!("the request could not be built: {why}"))),
        };
        let mut body = request.body_value();
        let sampling = Sampling {
            temperature: Some(0.0),
            seed: self.sampling.seed,
        };
        add_sampling(&mut body, model.format, &sampling);
        let call = crate::endpoint::Call {
            repetition,
            body: &body,
        };
        let reply = match model.endpoint.exchange(call).await {
            Ok(reply) => reply,
            Err(e) if fatal(&e) => {
                return Err(RunError {
                    kind: RunErrorKind::Endpoint(e.kind()),
                    message: format!(
                        "judge `{}` for {whom}, repetition {repetition}: {e}",
                        rubric.judge
                    ),
                });
            }
            Err(e) => return Ok(error(e.to_string())),
        };
        if !(200..300).contains(&reply.status) {
            return Ok(error(format!(
                "the judge answered HTTP {}: {}",
                reply.status,
                clip(&String::from_utf8_lossy(&reply.body), QUOTED)
            )));
        }
        let mut stream = Stream::new(model.stream);
        let text = match stream
            .feed(&reply.body)
            .map(drop)
            .and_then(|()| stream.finish())
        {
            Ok(answer) => answer.text,
            Err(e) => return Ok(error(e.to_string())),
        };
        Ok(match parse_reply(&text) {
            Ok((score, reason)) => {
                let verdict = if score >= rubric.threshold {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                };
                result(
                    verdict,
                    format!(
                        "score {score} (threshold {}): {}",
                        rubric.threshold,
                        clip(&reason, QUOTED)
                    ),
                )
            }
            Err(why) => error(format!(
                "the reply is not a judgement ({why}): {}",
                canonical_json(&serde_json::Value::String(clip(&text, QUOTED)))
            )),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_spec_compiles() {
        assert!(agent().is_ok(), "{:?}", agent().err());
    }

    #[test]
    fn replies_are_read_bare_or_fenced_and_anything_else_is_refused() {
        assert_eq!(
            parse_reply(" {\"score\": 0.8, \"reason\": \"Good.\"}\n"),
            Ok((0.8, "Good.".to_owned()))
        );
        assert_eq!(
            parse_reply("```json\n{\"score\": 1, \"reason\": \"All there.\"}\n```"),
            Ok((1.0, "All there.".to_owned()))
        );
        assert_eq!(
            parse_reply("```\n{\"score\": 0}\n```"),
            Ok((0.0, String::new()))
        );
        for bad in [
            "",
            "Score: 0.9",
            "Here it is: {\"score\": 0.9}",
            "{\"score\": 1.5}",
            "{\"score\": -0.1}",
            "{\"score\": \"0.9\"}",
            "{\"reason\": \"no score\"}",
            "[0.9]",
            "```json\n{\"score\": 0.9}",
            "{\"score\": 0.9, \"reason\": 3}",
        ] {
            assert!(parse_reply(bad).is_err(), "{bad}");
        }
    }
}
