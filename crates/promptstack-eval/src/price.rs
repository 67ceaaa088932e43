//! The price table: what a scenario run cost, from the tokens the provider reported.
//!
//! The table is data (`prices.toml`, bundled; a run may replace it with its own file), versioned
//! like the provider rules table, and matched the same way: the first row whose provider and
//! `models` glob match wins. There is no catch-all row, so a model the table does not name is
//! **unpriced** — its rows carry no cost — rather than priced at zero or at a guess.
//!
//! Prices are read as whole micro-dollars per million tokens (six decimals of a dollar), so a
//! cost is an exact integer sum: `Σ tokens × price / 10⁶`, rounded half up once per row.
//!
//! ```
//! use promptstack_eval::price::Prices;
//! use promptstack_eval::row::Usage;
//! use promptstack_eval::suite::ModelFormat;
//!
//! let prices = Prices::bundled();
//! let sonnet = prices.find(ModelFormat::Anthropic, "claude-sonnet-4-5").unwrap();
//! let usage = Usage {
//!     input_tokens: 10_000,
//!     output_tokens: 500,
//!     cache_read_tokens: Some(8_000),
//!     cache_write_tokens: Some(0),
//! };
//! // 2 000 uncached × $3 + 8 000 read × $0.30 + 500 out × $15, per million tokens.
//! assert_eq!(sonnet.cost(&usage).to_string(), "$0.015900");
//! assert!(prices.find(ModelFormat::OpenaiChat, "gemma-3-270m").is_none());
//! ```

use promptstack_core::provider::{Family, model_glob_matches};
use promptstack_core::spec::SourceMap;
use serde::{Deserialize, Serialize};

use crate::row::{MicroUsd, Usage};

/// The bundled table's text.
pub const BUNDLED: &str = include_str!("prices.toml");

/// The highest price a row may name, in dollars per million tokens.
pub const MAX_PRICE: f64 = 10_000.0;

/// The most rows a table may hold.
pub const MAX_ROWS: usize = 1024;

/// The largest table read, in bytes.
pub const MAX_TABLE_BYTES: usize = 1024 * 1024;

/// A versioned price table.
#[derive(Debug, Clone, PartialEq)]
pub struct Prices {
    version: String,
    rows: Vec<Price>,
}

/// One row: the prices of the models its glob matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Price {
    /// The provider family.
    pub provider: Family,
    /// The glob over model ids.
    pub models: String,
    /// Micro-dollars per million uncached input tokens.
    pub input: u64,
    /// Micro-dollars per million output tokens.
    pub output: u64,
    /// Micro-dollars per million input tokens read from the cache.
    pub cache_read: u64,
    /// Micro-dollars per million input tokens written to the cache.
    pub cache_write: u64,
    /// Where the numbers come from.
    pub source: String,
    /// The date of that price list.
    pub date: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: String,
    #[serde(default, rename = "price")]
    rows: Vec<Row>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Row {
    provider: Family,
    models: String,
    input: f64,
    output: f64,
    cache_read: Option<f64>,
    cache_write: Option<f64>,
    source: String,
    date: String,
}

/// Why a price table was refused: the file, and the line and column or the row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceError(String);

impl std::fmt::Display for PriceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PriceError {}

impl Prices {
    /// The table shipped with this build.
    pub fn bundled() -> &'static Prices {
        static PRICES: std::sync::OnceLock<Prices> = std::sync::OnceLock::new();
        PRICES.get_or_init(|| {
            Prices::from_toml(BUNDLED, "prices.toml").unwrap_or_else(|e| {
                // The bundled table is checked by a unit test; reaching this is a build defect.
                panic!("the bundled price table is invalid: {e}")
            })
        })
    }

    /// Parses and checks a table.
    ///
    /// # Errors
    ///
    /// A [`PriceError`] naming `name` with the line and column of a syntax or type error, or the
    /// row of a value out of range.
    pub fn from_toml(text: &str, name: &str) -> Result<Prices, PriceError> {
        if text.len() > MAX_TABLE_BYTES {
            return Err(PriceError(format!(
                "{name}: the table is {} bytes; the limit is {MAX_TABLE_BYTES}",
                text.len()
            )));
        }
        let file: File = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or_else(
                || name.to_owned(),
                |span| SourceMap::new(name, text).location(span.start).to_string(),
            );
            PriceError(format!("{at}: {}", e.message()))
        })?;
        if file.version.trim().is_empty() {
            return Err(PriceError(format!("{name}: `version` is empty")));
        }
        if file.rows.len() > MAX_ROWS {
            return Err(PriceError(format!(
                "{name}: {} rows; the limit is {MAX_ROWS}",
                file.rows.len()
            )));
        }
        let rows = file
            .rows
            .into_iter()
            .enumerate()
            .map(|(i, row)| {
                let bad = |why: String| PriceError(format!("{name}: price row {}: {why}", i + 1));
                if row.models.trim().is_empty() {
                    return Err(bad("`models` is empty".into()));
                }
                if row.source.trim().is_empty() || row.date.trim().is_empty() {
                    return Err(bad("every row names its `source` and `date`".into()));
                }
                let input = micro(row.input).map_err(|why| bad(format!("`input` {why}")))?;
                let price = |field: &str, value: Option<f64>| match value {
                    None => Ok(input),
                    Some(value) => micro(value).map_err(|why| bad(format!("`{field}` {why}"))),
                };
                Ok(Price {
                    provider: row.provider,
                    cache_read: price("cache_read", row.cache_read)?,
                    cache_write: price("cache_write", row.cache_write)?,
                    output: micro(row.output).map_err(|why| bad(format!("`output` {why}")))?,
                    input,
                    models: row.models,
                    source: row.source,
                    date: row.date,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Prices {
            version: file.version,
            rows,
        })
    }

    /// The table's version, which a report names.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The rows, in match order.
    pub fn rows(&self) -> &[Price] {
        &self.rows
    }

    /// The first row for a model reached in `format` (a suite's [`ModelFormat`](crate::suite::ModelFormat) or a provider
    /// [`Format`](promptstack_core::provider::Format)); none when the table does not price it.
    pub fn find(
        &self,
        format: impl Into<promptstack_core::provider::Format>,
        model: &str,
    ) -> Option<&Price> {
        let family = format.into().family();
        self.rows
            .iter()
            .find(|row| row.provider == family && model_glob_matches(&row.models, model))
    }
}

impl Price {
    /// What `usage` cost at this row's prices. Input tokens neither read from nor written to the
    /// cache are billed at the input price; a provider that reported nothing about its cache
    /// has every input token billed so.
    pub fn cost(&self, usage: &Usage) -> MicroUsd {
        let read = usage.cache_read_tokens.unwrap_or(0);
        let write = usage.cache_write_tokens.unwrap_or(0);
        let uncached = usage
            .input_tokens
            .saturating_sub(read)
            .saturating_sub(write);
        let micro_per_million = u128::from(uncached) * u128::from(self.input)
            + u128::from(read) * u128::from(self.cache_read)
            + u128::from(write) * u128::from(self.cache_write)
            + u128::from(usage.output_tokens) * u128::from(self.output);
        let rounded = (micro_per_million + 500_000) / 1_000_000;
        MicroUsd(u64::try_from(rounded).unwrap_or(u64::MAX))
    }
}

/// Dollars per million tokens as whole micro-dollars, refusing what is not a price.
fn micro(dollars: f64) -> Result<u64, String> {
    if !dollars.is_finite() || !(0.0..=MAX_PRICE).contains(&dollars) {
        return Err(format!("must be between 0 and {MAX_PRICE} dollars"));
    }
    let scaled = dollars * 1_000_000.0;
    let whole = scaled.round();
    if (scaled - whole).abs() > 1e-3 {
        return Err("has more than six decimals".into());
    }
    // In range by the check above: at most 10¹⁰.
    Ok(whole as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::ModelFormat;

    fn usage(input: u64, output: u64, read: Option<u64>, write: Option<u64>) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
        }
    }

    #[test]
    fn the_bundled_table_is_valid_and_prices_the_known_families() {
        let prices = Prices::bundled();
        assert!(!prices.version().is_empty());
        let opus45 = prices.find(ModelFormat::Anthropic, "claude-opus-4-5-20251101");
        assert_eq!(opus45.map(|p| p.input), Some(5_000_000));
        let opus41 = prices.find(ModelFormat::Anthropic, "claude-opus-4-1");
        assert_eq!(opus41.map(|p| p.input), Some(15_000_000));
        let gpt5 = prices
            .find(ModelFormat::OpenaiResponses, "openai/GPT-5")
            .unwrap();
        assert_eq!((gpt5.input, gpt5.cache_write), (1_250_000, 1_250_000));
        assert_eq!(
            prices
                .find(ModelFormat::OpenaiChat, "gpt-5-mini")
                .map(|p| p.input),
            Some(250_000)
        );
        assert!(
            prices
                .find(ModelFormat::Gemini, "gemini-2.5-flash")
                .is_some()
        );
        // No catch-all: a model the table does not name is unpriced.
        assert!(
            prices
                .find(ModelFormat::OpenaiChat, "gemma-3-270m")
                .is_none()
        );
        assert!(
            prices
                .find(ModelFormat::Gemini, "claude-sonnet-4-5")
                .is_none()
        );
    }

    #[test]
    fn costs_are_exact_and_rounded_once() {
        let prices = Prices::bundled();
        let mini = prices.find(ModelFormat::OpenaiChat, "gpt-4o-mini").unwrap();
        // 1 token in at $0.15/M is 0.15 micro-dollars: rounds to 0.
        assert_eq!(mini.cost(&usage(1, 0, None, None)), MicroUsd(0));
        // 10 tokens: 1.5 rounds half up to 2.
        assert_eq!(mini.cost(&usage(10, 0, None, None)), MicroUsd(2));
        // One million of each: $0.15 + $0.60.
        assert_eq!(
            mini.cost(&usage(1_000_000, 1_000_000, None, None)),
            MicroUsd(750_000)
        );
        // Cached tokens are billed at the read price, not again at the input price.
        assert_eq!(
            mini.cost(&usage(1_000_000, 0, Some(1_000_000), None)),
            MicroUsd(75_000)
        );
    }

    #[test]
    fn inconsistent_usage_never_overflows_or_goes_negative() {
        let prices = Prices::bundled();
        let row = prices
            .find(ModelFormat::Anthropic, "claude-opus-4-1")
            .unwrap();
        let huge = usage(u64::MAX, u64::MAX, Some(u64::MAX), Some(u64::MAX));
        assert_eq!(row.cost(&huge), MicroUsd(u64::MAX));
        let more_cached_than_input = usage(10, 0, Some(1_000_000), None);
        assert_eq!(row.cost(&more_cached_than_input), MicroUsd(1_500_000));
    }

    #[test]
    fn bad_tables_are_refused_with_their_place() {
        let cases = [
            (
                "version = \"1\"\n[[price]]\nprovider = \"anthropic\"\n",
                "t.toml:2:1: missing field `models`",
            ),
            (
                "version = \"1\"\n[[price]]\nprovider = \"x\"\nmodels = \"*\"\ninput = 1.0\noutput = 1.0\nsource = \"s\"\ndate = \"d\"\n",
                "t.toml:3:12",
            ),
            (
                "version = \"1\"\n[[price]]\nprovider = \"openai\"\nmodels = \"*\"\ninput = -1.0\noutput = 1.0\nsource = \"s\"\ndate = \"d\"\n",
                "price row 1: `input` must be between",
            ),
            (
                "version = \"1\"\n[[price]]\nprovider = \"openai\"\nmodels = \"*\"\ninput = 1.0\noutput = 1.0000001\nsource = \"s\"\ndate = \"d\"\n",
                "`output` has more than six decimals",
            ),
            (
                "version = \"1\"\n[[price]]\nprovider = \"openai\"\nmodels = \"*\"\ninput = 1.0\noutput = inf\nsource = \"s\"\ndate = \"d\"\n",
                "`output` must be between",
            ),
            (
                "version = \"1\"\n[[price]]\nprovider = \"openai\"\nmodels = \"*\"\ninput = 1.0\noutput = 1.0\nsource = \"\"\ndate = \"d\"\n",
                "names its `source` and `date`",
            ),
            ("version = \"\"\n", "`version` is empty"),
            ("version = \"1\"\nextra = 1\n", "unknown field `extra`"),
        ];
        for (text, expected) in cases {
            let error = Prices::from_toml(text, "t.toml").unwrap_err().to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
            assert!(error.starts_with("t.toml"), "{error}");
        }
        let big = "#".repeat(MAX_TABLE_BYTES + 1);
        assert!(Prices::from_toml(&big, "t.toml").is_err());
    }
}
