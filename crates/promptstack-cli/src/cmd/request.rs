//! The options every command that builds provider requests shares, and their one-line summary.

use std::path::PathBuf;

use anyhow::Context as _;
use promptstack::Assembly;
use promptstack::command::{self, RequestSettings, read_conversation};
use promptstack::compose::choose_target;
use promptstack::provider::{Format, Request, Rules};

use crate::exit::bad_input;
use crate::input;

/// A clap parser for a value named by strings (a format, a slot): it lists each of `all` with its
/// summary in `--help` and parses through the value's `FromStr`, the one the other front ends use.
pub fn named<T>(
    all: &[T],
    name: fn(T) -> &'static str,
    summary: fn(T) -> &'static str,
) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: Copy + Send + Sync + std::str::FromStr + 'static,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new(
        all.iter()
            .map(|&value| PossibleValue::new(name(value)).help(summary(value))),
    )
    .try_map(|name| name.parse::<T>())
}

/// The parser of a provider format.
pub fn provider_format() -> impl clap::builder::TypedValueParser<Value = Format> {
    named(&Format::ALL, Format::as_str, Format::summary)
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
    #[arg(long, default_value_t = promptstack::provider::DEFAULT_MAX_TOKENS)]
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
    /// The options as every front end gives them.
    pub fn settings(&self) -> RequestSettings {
        RequestSettings {
            conversation: None,
            model: self.model.clone(),
            max_tokens: Some(self.max_tokens),
            gap_seconds: self.gap_seconds,
            cache_key: self.cache_key.clone(),
            cached_content: self.cached_content.clone(),
        }
    }

    /// The options as the commands take them, with the conversation file read into them (and
    /// checked, any problem bad input naming the file).
    pub fn settings_read(&self) -> anyhow::Result<RequestSettings> {
        let mut settings = self.settings();
        if let Some(path) = &self.conversation {
            let bytes = input::read(path, promptstack::limits::InputKind::Conversation)?;
            read_conversation(&bytes, &path.display().to_string(), input::limits())
                .map_err(bad_input)?;
            settings.conversation = Some(serde_json::from_slice(&bytes).map_err(bad_input)?);
        }
        Ok(settings)
    }

    /// The rules table: the file given, or the bundled one.
    pub fn rules(&self) -> anyhow::Result<Rules> {
        rules(self.rules.as_deref())
    }
}

/// Reads a rules file, or returns the bundled table.
pub fn rules(path: Option<&std::path::Path>) -> anyhow::Result<Rules> {
    data_table(path, Rules::from_toml, || Rules::bundled().clone())
}

/// Reads a provider data table (TOML: rules, prices) given with a flag through the bounded reader,
/// any problem bad input naming the file; none given is the bundled table.
pub fn data_table<T, E>(
    path: Option<&std::path::Path>,
    parse: impl FnOnce(&str, &str) -> Result<T, E>,
    bundled: impl FnOnce() -> T,
) -> anyhow::Result<T>
where
    E: std::error::Error + Send + Sync + 'static,
{
    let Some(path) = path else {
        return Ok(bundled());
    };
    let bytes = input::read(path, promptstack::limits::InputKind::Rules)?;
    let text = String::from_utf8(bytes)
        .with_context(|| format!("{} is not UTF-8", path.display()))
        .map_err(bad_input)?;
    parse(&text, &path.display().to_string()).map_err(bad_input)
}

/// A command's refusal as the command line words it: what the input asked for that cannot be
/// (no target chosen, an unknown one, a request that cannot be built) is bad input.
pub fn command_error(error: command::Error) -> anyhow::Error {
    match error {
        command::Error::TargetRequired(several) => {
            bad_input(anyhow::anyhow!(several.message("choose one with --target")))
        }
        command::Error::FullInProviderFormat => bad_input(anyhow::anyhow!(
            "--full prints text or JSON; use --format text or --format json"
        )),
        command::Error::Conversation(e) => bad_input(e),
        command::Error::Engine(e) => match e.kind() {
            promptstack::ErrorKind::Request
            | promptstack::ErrorKind::Rules
            | promptstack::ErrorKind::NotFound => bad_input(e),
            _ => anyhow::Error::new(e),
        },
        other => anyhow::Error::new(other),
    }
}

/// The target to build for: the one named, or the only one the spec has.
pub fn target(assembly: &Assembly, named: Option<&str>) -> anyhow::Result<String> {
    choose_target(assembly.target_ids(), named)
        .map_err(|several| bad_input(anyhow::anyhow!(several.message("choose one with --target"))))
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
