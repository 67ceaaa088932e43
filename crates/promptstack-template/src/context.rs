//! The records of a send that templates read where they lie: a skill, a context file, the moment
//! of the send. Plain data; the send context that holds them is the core's
//! (`promptstack_core::SendContext`), which re-exports them at `promptstack_core::context`.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One context file: where it is and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextFile {
    /// The file's path (absolute or relative, any separator style).
    pub path: String,
    /// The file's text.
    pub content: String,
}

/// A skill the user enabled.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Skill {
    /// The skill's name (also its `/slug` unless `slug` is given).
    pub name: String,
    /// The token that invokes it in a message, without the slash. Defaults to the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// One line saying when the skill applies.
    pub description: String,
    /// The full instructions.
    #[serde(default)]
    pub instructions: String,
    /// Free labels a spec can filter on (e.g. `widget`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Hidden from the model: never listed, never inlined.
    #[serde(default)]
    pub disable_model_invocation: bool,
    /// Where the skill's full instructions can be loaded from (e.g. the path of its SKILL.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Site patterns (`*.example.com`, `docs.example.com:8443/api`) the skill applies to; empty
    /// means every site. The patterns are described in docs/layers.md, "Site patterns".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sites: Vec<String>,
}

impl Skill {
    /// The token that invokes the skill, without the slash.
    pub fn slug(&self) -> &str {
        self.slug.as_deref().unwrap_or(&self.name)
    }
}

/// The moment of a send: an instant plus the UTC offset of the user's wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    timestamp: jiff::Timestamp,
    offset: jiff::tz::Offset,
}

impl Now {
    /// The instant, in UTC.
    pub fn timestamp(&self) -> jiff::Timestamp {
        self.timestamp
    }

    /// The offset of the user's wall clock from UTC.
    pub fn offset(&self) -> jiff::tz::Offset {
        self.offset
    }

    /// The civil date and time on the user's wall clock.
    pub fn local(&self) -> jiff::civil::DateTime {
        self.offset.to_datetime(self.timestamp)
    }

    /// The civil date and time in UTC.
    pub fn utc(&self) -> jiff::civil::DateTime {
        jiff::tz::Offset::UTC.to_datetime(self.timestamp)
    }

    /// Returns the same instant on a different wall clock.
    pub fn with_offset(self, offset: jiff::tz::Offset) -> Self {
        Self { offset, ..self }
    }

    /// A moment from an instant and an offset.
    pub fn new(timestamp: jiff::Timestamp, offset: jiff::tz::Offset) -> Self {
        Self { timestamp, offset }
    }
}

/// Why a `now` value could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NowError(String);

impl fmt::Display for NowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NowError {}

impl FromStr for Now {
    type Err = NowError;

    /// Reads an RFC 3339 date-time, strictly (see `docs/spec.md`, "now"):
    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    ///
    /// - the year has exactly four digits (0000–9999), month and day exist in the calendar;
    /// - the separator is `T` (or `t`, or one space, as RFC 3339 allows);
    /// - hours 00–23, minutes 00–59, seconds 00–59: a leap second (`:60`) is refused, since the
    ///   engine's clock has none;
    /// - an optional fraction of one to nine digits (nanoseconds; more would be rounded away);
    /// - `Z` (or `z`), or an offset `±HH:MM` with hours 00–23 and minutes 00–59; offsets with
    ///   seconds (`+01:00:30`) are not RFC 3339 and are refused. `-00:00` is UTC.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            NowError(format!(
                "`{}` is not an RFC 3339 date-time with an offset ({why}); write e.g. 2026-11-30T09:15:00+01:00",
                crate::text::quote(s)
            ))
        };
        let b = s.as_bytes();
        let digits = |range: std::ops::Range<usize>, what: &str| -> Result<i32, NowError> {
            match b.get(range.clone()) {
                Some(part) if part.iter().all(u8::is_ascii_digit) => {
                    Ok(part.iter().fold(0i32, |n, d| n * 10 + i32::from(d - b'0')))
                }
                _ => Err(bad(&format!("{what} must be {} digits", range.len()))),
            }
        };
        let expect = |at: usize, allowed: &[u8], what: &str| -> Result<(), NowError> {
            match b.get(at) {
                Some(c) if allowed.contains(c) => Ok(()),
                _ => Err(bad(what)),
            }
        };
        let year = digits(0..4, "the year")?;
        expect(4, b"-", "expected `-` after the year")?;
        let month = digits(5..7, "the month")?;
        expect(7, b"-", "expected `-` after the month")?;
        let day = digits(8..10, "the day")?;
        if b.len() == 10 {
            return Err(bad("the time is missing"));
        }
        expect(10, b"Tt ", "expected `T` between the date and the time")?;
        let hour = digits(11..13, "the hour")?;
        expect(13, b":", "expected `:` after the hour")?;
        let minute = digits(14..16, "the minute")?;
        expect(16, b":", "expected `:` after the minute")?;
        let second = digits(17..19, "the second")?;
        let mut at = 19;
        let mut nanos = 0i32;
        if b.get(at) == Some(&b'.') {
            let count = b[at + 1..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            if count == 0 || count > 9 {
                return Err(bad("a fraction of a second has one to nine digits"));
            }
            nanos = digits(at + 1..at + 1 + count, "the fraction")? * 10i32.pow(9 - count as u32);
            at += 1 + count;
        }
        let offset_seconds = match b.get(at) {
            Some(b'Z' | b'z') if b.len() == at + 1 => 0,
            Some(sign @ (b'+' | b'-')) if b.len() == at + 6 => {
                let hours = digits(at + 1..at + 3, "the offset's hours")?;
                expect(at + 3, b":", "expected `:` in the offset")?;
                let minutes = digits(at + 4..at + 6, "the offset's minutes")?;
                if hours > 23 || minutes > 59 {
                    return Err(bad(
                        "the offset's hours must be 00-23 and its minutes 00-59",
                    ));
                }
                let seconds = hours * 3600 + minutes * 60;
                if *sign == b'-' { -seconds } else { seconds }
            }
            None | Some(b'+' | b'-' | b'Z' | b'z') if b.len() <= at + 1 => {
                return Err(bad("the UTC offset is missing"));
            }
            _ => return Err(bad("expected `Z` or an offset `+HH:MM` at the end")),
        };
        if hour > 23 || minute > 59 || second > 59 {
            return Err(bad(
                "hours must be 00-23, minutes and seconds 00-59 (leap seconds are not accepted)",
            ));
        }
        let date = jiff::civil::Date::new(year as i16, month as i8, day as i8)
            .map_err(|_| bad("no such day in the calendar"))?;
        let time = jiff::civil::Time::new(hour as i8, minute as i8, second as i8, nanos)
            .map_err(|e| bad(&e.to_string()))?;
        let offset =
            jiff::tz::Offset::from_seconds(offset_seconds).map_err(|e| bad(&e.to_string()))?;
        let timestamp = offset
            .to_timestamp(date.to_datetime(time))
            .map_err(|_| bad("the instant is outside the supported range"))?;
        Ok(Self { timestamp, offset })
    }
}

impl fmt::Display for Now {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let local = self.local();
        write!(f, "{}", local.strftime("%Y-%m-%dT%H:%M:%S"))?;
        let nanos = local.subsec_nanosecond();
        if nanos != 0 {
            let digits = format!("{nanos:09}");
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        if self.offset == jiff::tz::Offset::UTC {
            f.write_str("Z")
        } else {
            write!(f, "{}", format_offset(self.offset))
        }
    }
}

/// `+01:00` style.
pub(crate) fn format_offset(offset: jiff::tz::Offset) -> String {
    let seconds = offset.seconds();
    let sign = if seconds < 0 { '-' } else { '+' };
    let seconds = seconds.unsigned_abs();
    format!("{sign}{:02}:{:02}", seconds / 3600, (seconds % 3600) / 60)
}

impl Serialize for Now {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Now {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Now {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Now".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "RFC 3339 date-time with an explicit UTC offset, e.g. 2026-11-30T09:15:00+01:00"
        })
    }
}
