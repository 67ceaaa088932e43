//! The recorded turn: every tool call of one model turn as the Turn runtime decided it, so an eval
//! harness can grade a transcript with the runtime's own accounting (see
//! [`score_tool_calls`](crate::score_tool_calls)).
//!
//! The Turn (`promptstack_core::turn::Turn::record`) exports it; as JSON it reads
//!
//! ```json
//! {"calls": [
//!   {"tool": "search", "class": "web", "status": "completed", "charged": true},
//!   {"tool": "search", "class": "web", "status": "completed", "deduplicated": true, "duplicate": true},
//!   {"tool": "fetch", "class": "web", "status": "completed", "charged": true, "last_allowed": true},
//!   {"tool": "fetch", "class": "web", "status": "budget_exhausted"}
//! ]}
//! ```
//!
//! `false` flags and an absent class may be left out.

use serde::{Deserialize, Serialize};

/// Every tool call of one turn, in the order the calls finished.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnRecord {
    /// The calls.
    pub calls: Vec<RecordedCall>,
}

/// How a recorded call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedStatus {
    /// The tool ran, or an identical call's output was reused.
    Completed,
    /// The tool failed.
    Failed,
    /// The class's budget was used up: the tool did not run.
    BudgetExhausted,
}

/// One recorded call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordedCall {
    /// The tool's provider-facing name.
    pub tool: String,
    /// The budget class it drew from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// How it ended.
    pub status: RecordedStatus,
    /// Whether it was charged to its class (it ran).
    #[serde(default, skip_serializing_if = "is_false")]
    pub charged: bool,
    /// Whether it reused an identical call's execution instead of running.
    #[serde(default, skip_serializing_if = "is_false")]
    pub deduplicated: bool,
    /// Whether an identical call (same tool, same canonical input) came earlier in the turn.
    #[serde(default, skip_serializing_if = "is_false")]
    pub duplicate: bool,
    /// Whether it used the last call its class's cap allowed.
    #[serde(default, skip_serializing_if = "is_false")]
    pub last_allowed: bool,
}

fn is_false(flag: &bool) -> bool {
    !flag
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClassCallScore, score_tool_calls};

    #[test]
    fn a_recorded_turn_is_scored_per_class_and_tool() {
        let record: TurnRecord = serde_json::from_str(
            r#"{"calls": [
                {"tool": "search", "class": "web", "status": "completed", "charged": true},
                {"tool": "search", "class": "web", "status": "completed", "deduplicated": true, "duplicate": true},
                {"tool": "fetch", "class": "web", "status": "failed", "charged": true},
                {"tool": "fetch", "class": "web", "status": "completed", "charged": true, "last_allowed": true},
                {"tool": "fetch", "class": "web", "status": "budget_exhausted"},
                {"tool": "note", "status": "completed"},
                {"tool": "note", "status": "completed", "duplicate": true}
            ]}"#,
        )
        .unwrap();
        let score = score_tool_calls(&record);
        assert_eq!(score.calls, 7);
        assert_eq!(score.per_tool["search"], 2);
        assert_eq!(score.per_tool["fetch"], 3);
        assert_eq!(score.per_tool["note"], 2);
        assert_eq!(score.duplicates, 2);
        assert_eq!(score.failed, 1);
        assert_eq!(score.refused, 1);
        assert_eq!(
            score.per_class["web"],
            ClassCallScore {
                calls: 5,
                executed: 3,
                deduplicated: 1,
                refused: 1,
                exhausted: true,
            }
        );
        assert_eq!(score.per_class.len(), 1, "unbudgeted tools have no class");
        // The record round-trips, leaving false flags out.
        let json = serde_json::to_string(&record).unwrap();
        assert!(!json.contains("false"), "{json}");
        assert_eq!(serde_json::from_str::<TurnRecord>(&json).unwrap(), record);
        assert!(
            serde_json::from_str::<TurnRecord>(r#"{"calls": [{"tool": "x", "status": "done"}]}"#)
                .is_err()
        );
    }
}
