//! The `[turn]` section of a spec: the budgets per tool class and intent, and the source cap.
//! The Turn runtime (`turn`) reads it; its types are public there.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How many sources a conversation may number unless configured otherwise.
pub const DEFAULT_SOURCE_CAP: u32 = 200;

/// The Turn's configuration, as an agent spec declares it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnConfig {
    /// Budget classes and their caps; the default is the `web` class.
    #[serde(default)]
    pub budgets: BudgetsConfig,
    /// How many sources a conversation may number; past it no label is issued.
    #[serde(default = "default_source_cap")]
    pub source_cap: u32,
}

fn default_source_cap() -> u32 {
    DEFAULT_SOURCE_CAP
}

impl Default for TurnConfig {
    fn default() -> Self {
        Self {
            budgets: BudgetsConfig::default(),
            source_cap: DEFAULT_SOURCE_CAP,
        }
    }
}

/// The budget classes and their caps. Serialised as a map from class name to its config.
///
/// The default has one class, `web`: 5 calls, 12 with `/search`, 30 with `/research`, promoted to
/// 30 when the `research` skill loads mid-turn. A spec that declares budgets declares every class
/// its tools use; classes are not merged with the default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct BudgetsConfig {
    /// Budget configuration per class name.
    pub classes: BTreeMap<String, ClassBudgetConfig>,
}

impl Default for BudgetsConfig {
    fn default() -> Self {
        Self {
            classes: BTreeMap::from([("web".to_owned(), ClassBudgetConfig::default_web())]),
        }
    }
}

/// The caps of one budget class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassBudgetConfig {
    /// Calls per turn when the user message names none of this class's intents.
    pub auto: u32,
    /// Calls per turn for each intent, keyed by the slug that selects it (`research` for
    /// `/research`). Slugs are compared case-insensitively.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intents: BTreeMap<String, u32>,
    /// A skill whose loading mid-turn raises the cap to one intent's cap, once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promote: Option<BudgetPromotion>,
}

impl ClassBudgetConfig {
    /// The default `web` class: auto 5, search 12, research 30, promoted by the `research` skill.
    pub fn default_web() -> Self {
        Self {
            auto: 5,
            intents: BTreeMap::from([("search".to_owned(), 12), ("research".to_owned(), 30)]),
            promote: Some(BudgetPromotion {
                skill: "research".to_owned(),
                intent: "research".to_owned(),
            }),
        }
    }
}

/// A skill that, when loaded during a turn, raises a class's cap to an intent's cap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetPromotion {
    /// The skill's name.
    pub skill: String,
    /// The intent (a key of `intents`) whose cap the budget is raised to.
    pub intent: String,
}
