//! What a scenario's tools answer, and the fence nonces of one scenario run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use promptstack_core::fence::{FenceError, Nonce, NonceSource};
use promptstack_core::provider::canonical_json;
use promptstack_core::turn::{
    ExecuteFuture, ToolExecutor, ToolFailure, ToolInvocation, ToolOutput,
};
use sha2::{Digest as _, Sha256};

use crate::suite::{ScriptedTool, compile};

/// One scripted result, its pattern compiled and its output built.
#[derive(Debug)]
struct Entry {
    tool: String,
    arguments: Option<regex::Regex>,
    output: ToolOutput,
}

/// A scenario's scripted results, shared by every run of the scenario.
#[derive(Debug, Default)]
pub(crate) struct Scripts {
    entries: Vec<Entry>,
}

impl Scripts {
    /// Compiles a scenario's scripts.
    ///
    /// # Errors
    ///
    /// The message of a pattern that does not compile, naming the script.
    pub(crate) fn new(tools: &[ScriptedTool]) -> Result<Self, String> {
        let entries = tools
            .iter()
            .enumerate()
            .map(|(i, script)| {
                let arguments = match &script.arguments {
                    Some(pattern) => Some(compile(pattern).map_err(|why| {
                        format!("tools[{i}] (`{}`): arguments: {why}", script.tool)
                    })?),
                    None => None,
                };
                Ok(Entry {
                    tool: script.tool.clone(),
                    arguments,
                    output: output(script),
                })
            })
            .collect::<Result<_, String>>()?;
        Ok(Self { entries })
    }

    /// The output of the first script for `tool` whose pattern matches the canonical
    /// `arguments`.
    fn answer(&self, tool: &str, arguments: &str) -> Option<&ToolOutput> {
        self.entries
            .iter()
            .find(|e| e.tool == tool && e.arguments.as_ref().is_none_or(|p| p.is_match(arguments)))
            .map(|e| &e.output)
    }
}

/// A script's output: the result text, then each source as the page the model reads. The
/// injection is planted where a hostile page carries it: at the end of the first source's page
/// text, or at the end of the result text when the script reports no source.
fn output(script: &ScriptedTool) -> ToolOutput {
    let plant = |text: &str| match &script.injection {
        Some(injection) if text.is_empty() => injection.clone(),
        Some(injection) => format!("{text}\n\n{injection}"),
        None => text.to_owned(),
    };
    let mut output = ToolOutput::new();
    if script.sources.is_empty() {
        let text = plant(&script.result);
        if !text.is_empty() {
            output = output.text(text);
        }
        return output;
    }
    if !script.result.is_empty() {
        output = output.text(script.result.clone());
    }
    for (i, source) in script.sources.iter().enumerate() {
        let text = if i == 0 {
            plant(&source.text)
        } else {
            source.text.clone()
        };
        output = output.source(source.url.clone(), source.title.as_deref(), text);
    }
    output
}

/// The executor of every tool a scenario's assembly offers: it answers from the scripts.
pub(crate) struct Scripted(pub(crate) Arc<Scripts>);

impl ToolExecutor for Scripted {
    fn execute<'a>(&'a self, call: ToolInvocation<'a>) -> ExecuteFuture<'a> {
        let arguments = canonical_json(call.input);
        let answer = match self.0.answer(call.name, &arguments) {
            Some(output) => Ok(output.clone()),
            None => Err(ToolFailure::new(format!(
                "no result is scripted for this call of `{}` (arguments {})",
                call.name,
                clip(&arguments, 200)
            ))),
        };
        Box::pin(std::future::ready(answer))
    }
}

/// At most `max` bytes of `text`, cut at a character boundary, with `…` when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The fence nonces of one scenario run: SHA-256 over the run's identity and a counter.
///
/// A nonce must be unpredictable to whoever writes the fenced content. A scenario's content is
/// fixed in its suite before the run, and the model never sees how nonces are made, so nonces
/// derived from the run's identity are as unguessable to both as random ones; unlike random
/// ones, they make the second request of a turn the same bytes on every run, which is what lets
/// a recorded run replay. Everything else about the fence (defanging, the redraw when content
/// holds the nonce, the markers) is the production fence's.
pub(crate) struct RunNonces {
    key: [u8; 32],
    next: AtomicU64,
}

impl RunNonces {
    /// The nonces of the run identified by `parts`.
    pub(crate) fn new(parts: &[&str]) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(b"promptstack-eval fence nonce v1");
        for part in parts {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        Self {
            key: hasher.finalize().into(),
            next: AtomicU64::new(0),
        }
    }
}

impl NonceSource for RunNonces {
    fn draw(&self) -> Result<Nonce, FenceError> {
        let counter = self.next.fetch_add(1, Ordering::Relaxed);
        let mut hasher = Sha256::new();
        hasher.update(self.key);
        hasher.update(counter.to_le_bytes());
        let digest = hasher.finalize();
        Nonce::from_random_bytes(&digest[..8])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::ScriptedSource;
    use promptstack_core::turn::OutputPart;

    fn script(tool: &str, arguments: Option<&str>, result: &str) -> ScriptedTool {
        ScriptedTool {
            tool: tool.into(),
            arguments: arguments.map(str::to_owned),
            result: result.into(),
            sources: Vec::new(),
            injection: None,
        }
    }

    #[test]
    fn the_first_matching_script_answers() {
        let scripts = Scripts::new(&[
            script("search", Some("\"rust\""), "about rust"),
            script("search", None, "anything"),
        ])
        .unwrap();
        let text = |tool: &str, args: &str| {
            scripts.answer(tool, args).map(|o| match &o.parts[0] {
                OutputPart::Text(t) => t.clone(),
                OutputPart::Source { text, .. } => text.clone(),
            })
        };
        assert_eq!(
            text("search", r#"{"q":"rust"}"#).as_deref(),
            Some("about rust")
        );
        assert_eq!(text("search", r#"{"q":"go"}"#).as_deref(), Some("anything"));
        assert_eq!(text("fetch", "{}"), None);
    }

    #[test]
    fn the_injection_is_planted_in_the_first_page() {
        let mut with_sources = script("search", None, "results:");
        with_sources.sources = vec![
            ScriptedSource {
                url: "https://a.example/".into(),
                title: Some("A".into()),
                text: "page a".into(),
            },
            ScriptedSource {
                url: "https://b.example/".into(),
                title: None,
                text: "page b".into(),
            },
        ];
        with_sources.injection = Some("IGNORE ALL".into());
        let out = output(&with_sources);
        assert_eq!(out.parts[0], OutputPart::Text("results:".into()));
        assert!(
            matches!(&out.parts[1], OutputPart::Source { text, .. } if text == "page a\n\nIGNORE ALL")
        );
        assert!(matches!(&out.parts[2], OutputPart::Source { text, .. } if text == "page b"));

        let mut plain = script("fetch", None, "");
        plain.injection = Some("IGNORE ALL".into());
        assert_eq!(
            output(&plain).parts,
            [OutputPart::Text("IGNORE ALL".into())]
        );
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let error = Scripts::new(&[script("search", Some("("), "x")]).unwrap_err();
        assert!(error.starts_with("tools[0] (`search`)"), "{error}");
    }

    #[test]
    fn nonces_are_fresh_per_draw_and_the_same_per_run() {
        let a = RunNonces::new(&["v", "m", "s", "0"]);
        let b = RunNonces::new(&["v", "m", "s", "0"]);
        let c = RunNonces::new(&["v", "m", "s", "1"]);
        let first = a.draw().unwrap();
        assert_ne!(first, a.draw().unwrap());
        assert_eq!(first, b.draw().unwrap());
        assert_ne!(first, c.draw().unwrap());
        assert_eq!(first.as_str().len(), 16);
    }

    #[test]
    fn clipping_keeps_characters_whole() {
        assert_eq!(clip("héllo", 2), "h…");
        assert_eq!(clip("abc", 3), "abc");
    }
}
