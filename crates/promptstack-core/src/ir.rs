//! The compiled program of an agent: its units (blocks and notes), tools and targets, and
//! [`AgentInner`], what every handle of one agent shares (the program and its caches).
//!
//! The compiler (`agent::compile`) builds these types and every later step reads them; they
//! depend only on the spec's data types, the compiled templates and the caches, so nothing here
//! reads injections, assembly, composition or providers. The compiled stage is here too: the
//! injection builders read it, so it sits below them.

use std::collections::BTreeMap;
use std::sync::Arc;

use promptstack_template::{GateCode, TemplateSet};
use serde_json::{Map, Value};

use crate::block::Origin;
use crate::caches::Caches;
use crate::diagnostic::Diagnostic;
use crate::root::{ReadRoots, StableVariables, VolatileInput};
use crate::spec::{AgentSpec, BlockKind, Placement, SourceMap, Stability, Trust, UserPosition};

/// What an `Agent` handle shares: the compiled program and its caches. The implementation
/// modules (assemble, provider, inject, lint) work on it; `agent` is the public face.
pub(crate) struct AgentInner {
    pub(crate) spec: Arc<AgentSpec>,
    pub(crate) source: SourceMap,
    pub(crate) templates: TemplateSet,
    /// The roots the templates and gates can read; the others are not built for a send.
    pub(crate) read_roots: ReadRoots,
    /// The roots the volatile units' templates and gates can read: what a volatile render's
    /// context holds.
    pub(crate) volatile_roots: ReadRoots,
    /// The stable variables, as the stable key reads them.
    pub(crate) stable_variables: StableVariables,
    pub(crate) units: Vec<Unit>,
    pub(crate) tools: Vec<CompiledTool>,
    pub(crate) targets: Arc<Vec<CompiledTarget>>,
    pub(crate) lint: Vec<Diagnostic>,
    /// Every cache: stable parts, volatile units, MCP listings, tool units, token counts.
    pub(crate) caches: Caches,
    /// The stage, when the spec declares one: capabilities, subagents, injected blocks.
    pub(crate) stage: Option<CompiledStage>,
    /// How long the halves the agent wrote last were.
    pub(crate) half_sizes: HalfSizes,
}

/// How long the last stable and volatile halves an agent wrote were: the next sends' halves are
/// usually about as long, so reserving that much writes them without growing (and copying) the
/// text as each block goes in.
#[derive(Debug, Default)]
pub(crate) struct HalfSizes {
    pub stable: std::sync::atomic::AtomicUsize,
    pub volatile: std::sync::atomic::AtomicUsize,
}

impl AgentInner {
    /// The same compiled program with empty caches of its own.
    pub(crate) fn without_caches(&self) -> Self {
        Self {
            spec: Arc::clone(&self.spec),
            source: self.source.clone(),
            templates: self.templates.clone(),
            read_roots: self.read_roots,
            volatile_roots: self.volatile_roots,
            stable_variables: self.stable_variables.clone(),
            units: self.units.clone(),
            tools: self.tools.clone(),
            targets: Arc::clone(&self.targets),
            lint: self.lint.clone(),
            caches: Caches::default(),
            stage: self.stage.clone(),
            half_sizes: HalfSizes::default(),
        }
    }
}

/// Which text a block or note has: literal, or a template by name.
#[derive(Debug, Clone)]
pub(crate) enum Body {
    Text(String),
    Template(promptstack_template::Template),
}

/// A compiled gate: the template that evaluates it and its source expression.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    pub template: String,
    pub expression: String,
    /// The gate's code over the agent's gate atoms, when the expression is in the subset
    /// decided without rendering (see [`SimpleGate`](promptstack_template::SimpleGate)).
    pub code: Option<GateCode>,
}

#[derive(Debug, Clone)]
pub(crate) struct Variant {
    pub id: String,
    pub gate: Gate,
    pub body: Body,
}

/// A compiled block or note.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    pub id: Arc<str>,
    pub kind: BlockKind,
    pub trust: Trust,
    pub stability: Stability,
    pub placement: Placement,
    pub origin: Arc<Origin>,
    pub body: Body,
    pub gate: Option<Gate>,
    pub variants: Vec<Variant>,
    pub max_tokens: Option<u32>,
    /// Variable paths the unit's templates emit or test, for naming empty variables.
    pub reads: Vec<String>,
    /// The volatile inputs the unit's templates and gates read (volatile units only); a volatile
    /// unit whose inputs did not change since an earlier send is not rendered again.
    pub volatile_inputs: Vec<VolatileInput>,
    /// Whether the unit is always present (no gate; literal or template text).
    pub unconditional: bool,
    /// The subagent topic whose prompt this unit is; `None` for the main prompt (and notes).
    pub scope: Option<Arc<str>>,
}

/// The most variants one block may have (they are numbered `a` to `z` in gate programs).
pub(crate) const MAX_VARIANTS: usize = 26;

impl Unit {
    /// The names of the templates and gates the unit renders: its gate, its variants' gates and
    /// texts, and its own text.
    pub(crate) fn templates(&self) -> impl Iterator<Item = &str> {
        fn template(body: &Body) -> Option<&str> {
            match body {
                Body::Template(template) => Some(template.name()),
                Body::Text(_) => None,
            }
        }
        self.gate
            .iter()
            .map(|gate| gate.template.as_str())
            .chain(self.variants.iter().flat_map(|variant| {
                std::iter::once(variant.gate.template.as_str()).chain(template(&variant.body))
            }))
            .chain(template(&self.body))
    }
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledTool {
    pub spec: crate::spec::ToolSpec,
    /// The tool as offered, built once and shared by every toolset that includes it.
    pub tool: Arc<crate::toolset::Tool>,
    pub gate: Option<Gate>,
}

/// One item of a target's system list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TargetItem {
    Stable,
    Volatile,
    /// A unit (note or target-placed block): its index among the units, and its id.
    Unit(usize, Arc<str>),
}

#[derive(Debug, Clone)]
pub(crate) struct CompiledTarget {
    pub id: String,
    pub system: Vec<TargetItem>,
    pub user: Vec<(usize, Arc<str>)>,
    pub user_position: UserPosition,
    pub separator: String,
    /// The token budget, if the target has one.
    pub budget: Option<u32>,
    /// Shedding priority and pinning of every block and note, by id (only with a budget).
    pub shedding: Vec<(Arc<str>, i32, bool)>,
}

/// A capability enabled on a stage, with its configuration resolved at compile time.
#[derive(Debug, Clone)]
pub(crate) struct CompiledCapability {
    pub slug: String,
    /// Whether it comes from a registry manifest (else it is built in).
    pub registry: bool,
    pub compliance: bool,
    pub config: Map<String, Value>,
    /// The unsubstituted default text for this configuration.
    pub default_text: &'static str,
    /// The registry fragment (registry capabilities only; `default_text` is empty then).
    pub fragment: Option<String>,
    /// The tools it registers, by name.
    pub tools: Vec<String>,
}

impl CompiledCapability {
    pub(crate) fn default_source(&self) -> &str {
        self.fragment.as_deref().unwrap_or(self.default_text)
    }
}

/// A stage, compiled.
#[derive(Debug, Clone, Default)]
pub(crate) struct CompiledStage {
    pub capabilities: Vec<CompiledCapability>,
    /// Subagent topics with the index of their prompt's unit.
    pub subagents: BTreeMap<String, usize>,
    /// Whether the main prompt's authored body has a volatile block.
    pub main_volatile: bool,
}
