//! The eval layer of promptstack: what a run of prompt versions against models produced, what
//! the numbers honestly say, and the reports that show it.
//!
//! ```text
//! ResultRow (one per version × model × scenario × repetition) ─► Run
//!   ─► Statistics::compute: cells with Wilson intervals; per model, every two versions
//!      compared over shared scenarios (cluster bootstrap, exact McNemar, MDE, verdict)
//!   ─► Report: --json document · JUnit XML · self-contained HTML · terminal summary
//! ```
//!
//! This crate holds the suite format ([`suite`]), the runner that plays each scenario as one
//! Turn against a model endpoint ([`run`]), the deterministic assertions decided on a run
//! ([`assess`]), the stream reader ([`wire`]), recordings ([`record`]), the result model, the
//! statistics and the reports. It speaks no HTTP (an [`endpoint::Endpoint`] does: the HTTP
//! connectors live in the `promptstack` crate's `eval` module) and needs no
//! particular async runtime; its IO is reading a suite's send files and recordings, its clock
//! the runner's latencies, and its only randomness the seeded bootstrap.
//!
//! # Example
//!
//! ```
//! use promptstack_eval::report::{Report, TerminalConfig};
//! use promptstack_eval::row::{ResultRow, RowKey, Run};
//! use promptstack_eval::stats::StatsConfig;
//!
//! let key = |version: &str, scenario: &str, repetition| RowKey {
//!     agent: "chat-assistant".into(),
//!     version_id: version.into(),
//!     fingerprint: "f".into(),
//!     rules_version: "1".into(),
//!     model: "local".into(),
//!     tier: "small".into(),
//!     scenario: scenario.into(),
//!     repetition,
//! };
//! let mut rows = Vec::new();
//! for scenario in ["cite", "search", "widget"] {
//!     for repetition in 0..3 {
//!         rows.push(ResultRow::new(key("v1", scenario, repetition), repetition > 0));
//!         rows.push(ResultRow::new(key("v2", scenario, repetition), true));
//!     }
//! }
//! let report = Report::new(Run::new("smoke", rows), &StatsConfig::default()).unwrap();
//! let cell = &report.statistics().cells[0];
//! assert_eq!((cell.passes, cell.runs), (2, 3));
//! assert!(cell.interval.contains(cell.pass_rate));
//! assert!(report.to_terminal(&TerminalConfig::new(80)).contains("v1 vs v2"));
//! ```

pub mod assess;
pub mod endpoint;
mod error;
pub mod price;
pub mod record;
pub mod report;
pub mod row;
pub mod run;
pub mod stats;
pub mod suite;
#[cfg(feature = "testing")]
pub mod testing;
pub mod wire;

pub use error::{Error, ErrorKind};

#[cfg(test)]
mod send_sync {
    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn public_types_are_send_and_sync() {
        assert_send_sync::<crate::row::Run>();
        assert_send_sync::<crate::stats::Statistics>();
        assert_send_sync::<crate::report::Report>();
        assert_send_sync::<crate::Error>();
        assert_send_sync::<crate::run::Runner>();
        assert_send_sync::<crate::record::Recording>();
        assert_send_sync::<crate::record::Replay>();
    }
}
