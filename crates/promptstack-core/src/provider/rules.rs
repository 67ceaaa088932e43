//! Provider caching rules as data: a versioned table, shipped in the crate and replaceable by a file.
//!
//! Every number the planner, the builders and the simulator use about a provider's prompt cache
//! (minimum prefix, breakpoint budget, lookback, lifetimes, price multipliers) comes from a
//! [`Rule`] row of a [`Rules`] table, never from code. Each row names its source and date.

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};

/// The table shipped with this build.
pub const BUNDLED: &str = include_str!("rules.toml");

/// A provider family, as the rules table names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions and Responses.
    Openai,
    /// Google Gemini.
    Gemini,
}

impl Family {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Anthropic => "anthropic",
            Family::Openai => "openai",
            Family::Gemini => "gemini",
        }
    }
}

/// A cache lifetime an explicit breakpoint may ask for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ttl {
    /// The provider's literal (`5m`, `1h`, `30m`, …).
    pub name: String,
    /// The lifetime in seconds.
    pub seconds: u32,
    /// Price multiplier of a token written with this lifetime.
    pub write: f64,
}

/// A longer automatic retention a request can ask for (OpenAI `prompt_cache_retention`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Retention {
    /// The provider's literal (`24h`).
    pub name: String,
    /// The retention in seconds.
    pub seconds: u32,
}

/// One row: how one provider caches prompts for the models matching a pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// The provider family.
    pub provider: Family,
    /// A glob over the lowercase model id (`*` matches any run of characters).
    pub models: String,
    /// The shortest prefix, in tokens, the provider caches.
    pub min_tokens: u32,
    /// Whether requests can mark breakpoints themselves.
    pub explicit_breakpoints: bool,
    /// How many explicit breakpoints one request may carry.
    pub max_breakpoints: u32,
    /// How many blocks before a breakpoint the provider searches for an earlier entry (0: no limit).
    pub lookback_blocks: u32,
    /// Lifetimes an explicit breakpoint may ask for, shortest first.
    #[serde(default)]
    pub ttls: Vec<Ttl>,
    /// Price multiplier of a token read from the cache.
    pub read: f64,
    /// Whether the provider caches prefixes by itself.
    pub automatic: bool,
    /// Automatic matches count in steps of this many tokens.
    #[serde(default = "one")]
    pub automatic_step: u32,
    /// How long an automatic entry lives without use, in seconds.
    #[serde(default)]
    pub automatic_seconds: u32,
    /// Longer automatic retentions a request can ask for.
    #[serde(default)]
    pub retention: Vec<Retention>,
    /// Default lifetime of an explicit cached-content object, in seconds (Gemini).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_content_seconds: Option<u32>,
    /// Where the numbers come from.
    pub source: String,
    /// The date of that documentation.
    pub date: String,
}

fn one() -> u32 {
    1
}

impl Rule {
    /// Whether this row applies to a model id.
    pub fn matches(&self, family: Family, model: &str) -> bool {
        self.provider == family && model_glob_matches(&self.models, model)
    }

    /// The shortest lifetime that outlives `gap_seconds`, else the longest one.
    pub fn ttl_for_gap(&self, gap_seconds: Option<u32>) -> Option<&Ttl> {
        let gap = gap_seconds.unwrap_or(0);
        self.ttls
            .iter()
            .find(|t| t.seconds > gap)
            .or_else(|| self.ttls.last())
    }

    /// The shortest lifetime.
    pub fn shortest_ttl(&self) -> Option<&Ttl> {
        self.ttls.first()
    }
}

/// A versioned rules table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// The table's version; every request preview names it.
    pub version: String,
    /// The rows, matched in order.
    #[serde(rename = "rule")]
    pub rows: Vec<Rule>,
}

impl Rules {
    /// The table shipped with this build.
    pub fn bundled() -> &'static Rules {
        static RULES: std::sync::OnceLock<Rules> = std::sync::OnceLock::new();
        RULES.get_or_init(|| {
            Rules::from_toml(BUNDLED, "rules.toml").unwrap_or_else(|e| {
                // The bundled table is checked by a unit test; reaching this is a build defect.
                panic!("the bundled provider rules are invalid: {e}")
            })
        })
    }

    /// Parses and checks a table.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Rules`] naming the file, the line and column (for syntax and type errors) or
    /// the row (for inconsistent values).
    pub fn from_toml(text: &str, name: &str) -> Result<Rules, Error> {
        let rules: Rules = toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|span| {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                    format!("{name}:{line}:{column}: ")
                })
                .unwrap_or_else(|| format!("{name}: "));
            Error::new(ErrorKind::Rules, format!("{at}{}", e.message().trim_end()))
        })?;
        rules.check(name)?;
        Ok(rules)
    }

    fn check(&self, name: &str) -> Result<(), Error> {
        let bad = |i: usize, why: String| {
            Error::new(ErrorKind::Rules, format!("{name}: rule[{i}]: {why}"))
        };
        if self.version.trim().is_empty() {
            return Err(Error::new(
                ErrorKind::Rules,
                format!("{name}: `version` must not be empty"),
            ));
        }
        for (i, row) in self.rows.iter().enumerate() {
            if row.models.is_empty() {
                return Err(bad(i, "`models` must not be empty".into()));
            }
            if row.explicit_breakpoints && (row.max_breakpoints == 0 || row.ttls.is_empty()) {
                return Err(bad(
                    i,
                    "explicit breakpoints need `max_breakpoints` > 0 and at least one ttl".into(),
                ));
            }
            if row.ttls.windows(2).any(|w| w[0].seconds >= w[1].seconds) {
                return Err(bad(i, "`ttls` must be ordered shortest first".into()));
            }
            let multipliers = row.ttls.iter().map(|t| t.write).chain([row.read]);
            if multipliers.clone().any(|m| !m.is_finite() || m < 0.0) {
                return Err(bad(
                    i,
                    "price multipliers must be finite and not negative".into(),
                ));
            }
            if row.automatic && (row.automatic_step == 0 || row.automatic_seconds == 0) {
                return Err(bad(
                    i,
                    "automatic caching needs `automatic_step` and `automatic_seconds` > 0".into(),
                ));
            }
            if row.source.trim().is_empty() || row.date.trim().is_empty() {
                return Err(bad(i, "every row names its `source` and `date`".into()));
            }
        }
        Ok(())
    }

    /// The first row for this provider and model.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Rules`] when no row matches.
    pub fn find(&self, family: Family, model: &str) -> Result<&Rule, Error> {
        self.rows
            .iter()
            .find(|r| r.matches(family, model))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Rules,
                    format!(
                        "rules {} have no row for {} model `{model}`",
                        self.version,
                        family.as_str()
                    ),
                )
            })
    }
}

/// Whether a `models` glob of a provider data table (`*` matches any run of characters) matches a
/// model id, compared lowercase and without a `vendor/` prefix: the one way the rules table and
/// every other per-model table match models.
pub fn model_glob_matches(pattern: &str, model: &str) -> bool {
    glob(pattern, &normalise_model(model))
}

/// The lowercase model id without a `vendor/` prefix.
fn normalise_model(model: &str) -> String {
    let lower = model.to_ascii_lowercase();
    match lower.rsplit_once('/') {
        Some((_, id)) => id.to_owned(),
        None => lower,
    }
}

/// Glob matching with `*` only, linear in practice for the short patterns of the table.
fn glob(pattern: &str, text: &str) -> bool {
    let mut pieces = pattern.split('*');
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        // No `*`: the whole text must equal the pattern.
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_table_is_valid_and_complete() {
        let rules = Rules::bundled();
        for family in [Family::Anthropic, Family::Openai, Family::Gemini] {
            assert!(rules.find(family, "some-future-model").is_ok());
        }
        let opus = rules
            .find(Family::Anthropic, "claude-opus-4-5-20251101")
            .unwrap();
        assert_eq!(opus.min_tokens, 4096);
        let sonnet = rules.find(Family::Anthropic, "claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.min_tokens, 1024);
        let gpt = rules.find(Family::Openai, "openai/gpt-5").unwrap();
        assert_eq!(gpt.automatic_step, 128);
        assert!(!gpt.explicit_breakpoints);
        assert!(
            rules
                .find(Family::Openai, "gpt-5.6-mini")
                .unwrap()
                .explicit_breakpoints
        );
    }

    #[test]
    fn glob_matches() {
        assert!(glob("*", ""));
        assert!(glob("gpt-5*", "gpt-5.1"));
        assert!(!glob("gpt-5*", "gpt-4o"));
        assert!(glob("claude-*haiku-3*", "claude-3-5-haiku-3"));
        assert!(glob("gemini-3*pro*", "gemini-3.1-pro-preview"));
        assert!(!glob("exact", "exactly"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
    }

    #[test]
    fn bad_tables_are_located() {
        let error = Rules::from_toml("version = \"x\"\n[[rule]]\nprovider = \"nope\"\n", "r.toml")
            .unwrap_err();
        assert!(error.to_string().starts_with("r.toml:3:"), "{error}");
        let unordered = BUNDLED.replacen(
            "ttls = [{ name = \"5m\", seconds = 300, write = 1.25 }, { name = \"1h\", seconds = 3600, write = 2.0 }]",
            "ttls = [{ name = \"1h\", seconds = 3600, write = 2.0 }, { name = \"5m\", seconds = 300, write = 1.25 }]",
            1,
        );
        let error = Rules::from_toml(&unordered, "r.toml").unwrap_err();
        assert!(error.to_string().contains("rule[0]"), "{error}");
    }
}
