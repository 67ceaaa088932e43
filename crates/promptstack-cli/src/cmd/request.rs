//! The options every command that builds provider requests shares, and their one-line summary.

use std::path::PathBuf;

use anyhow::Context as _;
use promptstack::provider::{Conversation, Format, Request, RequestOptions, Rules};
use promptstack::{Agent, Assembly};

use crate::exit::bad_input;
use crate::input;

/// A provider request format, as the commands that plan requests name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProviderFormat {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions.
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Gemini generateContent (REST).
    Gemini,
}

impl From<ProviderFormat> for Format {
    fn from(format: ProviderFormat) -> Self {
        match format {
            ProviderFormat::Anthropic => Format::Anthropic,
            ProviderFormat::OpenaiChat => Format::OpenaiChat,
            ProviderFormat::OpenaiResponses => Format::OpenaiResponses,
            ProviderFormat::Gemini => Format::Gemini,
        }
    }
}

/// Options of a provider request.
#[derive(Debug, Clone, clap::Args)]
pub struct RequestArgs {
    /// The conversation so far (JSON: `{"messages": [...]}`), for provider formats.
    #[arg(long)]
    pub conversation: Option<PathBuf>,
    /// A provider rules table (TOML) replacing the bundled one.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// The model id sent (default: the send's model id).
    #[arg(long)]
    pub model: Option<String>,
    /// The output token limit.
    #[arg(long, default_value_t = 4096)]
    pub max_tokens: u32,
    /// The expected seconds until the thread's next request (chooses cache lifetimes).
    #[arg(long)]
    pub gap_seconds: Option<u32>,
    /// OpenAI `prompt_cache_key` (default: the agent name and the start of the fingerprint).
    #[arg(long)]
    pub cache_key: Option<String>,
    /// Gemini: an explicit cached content (`cachedContents/…`) holding the system text and tools.
    #[arg(long)]
    pub cached_content: Option<String>,
}

impl RequestArgs {
    /// Builds the request.
    pub fn build(
        &self,
        agent: &Agent,
        assembly: &Assembly,
        format: Format,
        target: &str,
    ) -> anyhow::Result<Request> {
        let conversation = match &self.conversation {
            Some(path) => conversation(path)?,
            None => Conversation::default(),
        };
        let rules = self.rules()?;
        let options = RequestOptions {
            format,
            target: target.to_owned(),
            model: self.model.clone(),
            max_tokens: self.max_tokens,
            expected_gap_seconds: self.gap_seconds,
            cache_key: self.cache_key.clone(),
            cached_content: self.cached_content.clone(),
        };
        agent
            .request(assembly, &conversation, &rules, &options)
            .map_err(|e| match e.kind() {
                promptstack::ErrorKind::Request
                | promptstack::ErrorKind::Rules
                | promptstack::ErrorKind::NotFound => bad_input(e),
                _ => anyhow::Error::new(e),
            })
    }

    /// The rules table: the file given, or the bundled one.
    pub fn rules(&self) -> anyhow::Result<Rules> {
        rules(self.rules.as_deref())
    }
}

/// Reads a rules file, or returns the bundled table.
pub fn rules(path: Option<&std::path::Path>) -> anyhow::Result<Rules> {
    match path {
        Some(path) => {
            let bytes = input::read(path, promptstack::limits::InputKind::Rules)?;
            let text = String::from_utf8(bytes)
                .with_context(|| format!("{} is not UTF-8", path.display()))
                .map_err(bad_input)?;
            Rules::from_toml(&text, &path.display().to_string()).map_err(bad_input)
        }
        None => Ok(Rules::bundled().clone()),
    }
}

/// Reads a conversation file.
pub fn conversation(path: &std::path::Path) -> anyhow::Result<Conversation> {
    use promptstack::limits::{InputKind, Limit};
    let bytes = input::read(path, InputKind::Conversation)?;
    let limits = input::limits();
    let caps = promptstack::provider::ConversationLimits::new()
        .max_bytes(limits.get(Limit::ConversationBytes) as usize)
        .max_messages(limits.get(Limit::ConversationMessages) as usize);
    Conversation::from_json_with(&bytes, &path.display().to_string(), &caps).map_err(bad_input)
}

/// The target to build for: the one named, or the only one the spec has.
pub fn target(assembly: &Assembly, named: Option<&str>) -> anyhow::Result<String> {
    if let Some(target) = named {
        return Ok(target.to_owned());
    }
    let ids: Vec<&str> = assembly.target_ids().collect();
    match ids.as_slice() {
        [one] => Ok((*one).to_owned()),
        _ => Err(bad_input(anyhow::anyhow!(
            "this spec has several targets ({}); choose one with --target",
            ids.join(", ")
        ))),
    }
}

/// One line naming the rules version, the row, the breakpoints and the expected cost.
pub fn summary(request: &Request) -> String {
    let plan = &request.plan;
    let breakpoints = if plan.breakpoints.is_empty() {
        "no explicit breakpoints".to_owned()
    } else {
        plan.breakpoints
            .iter()
            .map(|b| {
                format!(
                    "{} at {} ({} tokens, {}, {})",
                    b.boundary.as_str(),
                    b.at,
                    b.prefix_tokens,
                    b.ttl,
                    b.fingerprint.short()
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    format!(
        "{} {} · rules {} (row `{}`, {}) · {} input tokens · {} · cost cold {:.2}×, repeat {:.2}×",
        request.format.as_str(),
        request.model,
        plan.rules_version,
        plan.rule.models,
        plan.rule.date,
        plan.total_tokens,
        breakpoints,
        plan.cold.relative,
        plan.repeat.relative
    )
}
