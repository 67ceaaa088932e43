//! Hooks for the core's tests that need a whole agent (feature `testing`): the differential tests
//! over the examples and over generated sends compare what the plans and the gates' code answer
//! with what minijinja renders, from contexts only the core can build. Not a stable API: only the
//! core's dev-dependencies enable the feature, and nothing here runs unless a test asks for it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use minijinja::value::Value;

use crate::spec::VariableSpec;
use crate::{Context, Declared, GateCode, GateContext, SimpleGate, TemplateSet, gate, plan};

std::thread_local! {
    /// Every render requested on this thread while recording (see [`record_renders`]).
    static RENDERS: std::cell::RefCell<Option<Vec<Render>>> = const {
        std::cell::RefCell::new(None)
    };
}

/// A render requested of a [`TemplateSet`]: the template's name, the context as minijinja sees
/// it, and what the plan wrote from the borrowed context (its text and empty emissions), if it
/// answered.
#[derive(Debug, Clone)]
pub struct Render {
    /// The template's name in its set.
    pub template: String,
    /// The context as minijinja sees it.
    pub context: Value,
    /// What the plan wrote, if the template has one and it answered.
    pub planned: Option<(String, u32)>,
}

/// Whether any thread has started recording. The core's benches and examples are built with
/// this feature (it comes with its dev-dependencies), so a render that no test records pays one
/// relaxed load here, not a thread-local lookup.
static RECORDING: AtomicBool = AtomicBool::new(false);

/// Starts recording the renders of this thread, dropping any recorded before.
pub fn record_renders() {
    RECORDING.store(true, Ordering::Relaxed);
    RENDERS.with(|renders| *renders.borrow_mut() = Some(Vec::new()));
}

/// The renders recorded on this thread since the last call (or [`record_renders`]); recording
/// goes on.
pub fn take_renders() -> Vec<Render> {
    RENDERS.with(|renders| {
        renders
            .borrow_mut()
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    })
}

/// Records one render, when this thread records.
#[inline]
pub(crate) fn note_render(template: &str, context: &Context<'_>, planned: Option<(&str, u32)>) {
    if RECORDING.load(Ordering::Relaxed) {
        note(template, context, planned);
    }
}

#[cold]
fn note(template: &str, context: &Context<'_>, planned: Option<(&str, u32)>) {
    RENDERS.with(|renders| {
        if let Some(renders) = renders.borrow_mut().as_mut() {
            renders.push(Render {
                template: template.to_owned(),
                context: context.value().clone(),
                planned: planned.map(|(text, empty)| (text.to_owned(), empty)),
            });
        }
    });
}

/// A template's plan, compiled on its own (against declarations of the test's choosing).
#[derive(Debug, Clone)]
pub struct Plan(Arc<plan::Plan>);

impl Plan {
    /// Plans a template source as [`TemplateSet::add`] does, against `declared`; `None` when it
    /// is outside the subset.
    pub fn compile(set: &TemplateSet, source: &str, declared: &Declared) -> Option<Self> {
        plan::Plan::compile(source, &set.syntax, declared).map(|plan| Self(Arc::new(plan)))
    }

    /// What the plan writes against the context with the set's fuel: its text and empty
    /// emissions, or `None` when minijinja must render it.
    pub fn render(&self, set: &TemplateSet, context: &Context<'_>) -> Option<(String, u32)> {
        written(self.0.render(context, set.fuel()))
    }
}

fn written(written: Option<plan::Written>) -> Option<(String, u32)> {
    written.map(|w| (w.text, w.empty_emissions))
}

/// The atoms of a set of simple gates, compiled outside a [`TemplateSet`].
#[derive(Debug, Clone, Default)]
pub struct GateAtoms(gate::GateAtoms);

impl GateAtoms {
    /// Compiles a gate, adding the atoms it has that are not known yet.
    pub fn compile(&mut self, gate: &SimpleGate) -> GateCode {
        self.0.compile(gate)
    }

    /// What a gate's code decides over these atoms, or `None` where it is minijinja's to answer.
    pub fn decide(&self, code: &GateCode, context: &GateContext<'_, '_>) -> Option<bool> {
        code.decide(&self.0, context)
    }
}

/// What a simple gate alone decides, or `None` where it is minijinja's to answer.
pub fn decide(gate: &SimpleGate, context: &Context<'_>) -> Option<bool> {
    gate.decide(context)
}

/// The declarations of a spec's variables, with a table of their own, as an agent makes them.
pub fn declared(variables: &BTreeMap<String, VariableSpec>) -> Declared {
    Declared::of(variables)
}

impl TemplateSet {
    /// How many of the templates have a plan, and how many templates there are.
    pub fn planned(&self) -> (usize, usize) {
        let planned = self.plans.values().filter(|plan| plan.is_some()).count();
        (planned, self.plans.len())
    }

    /// Whether the template of this name has a plan.
    pub fn has_plan(&self, name: &str) -> bool {
        self.plans.get(name).is_some_and(Option::is_some)
    }

    /// What the plan of `name` writes against the context, if it has one and it answers.
    pub fn render_planned(&self, name: &str, context: &Context<'_>) -> Option<(String, u32)> {
        written(self.plans.get(name)?.as_ref()?.render(context, self.fuel()))
    }

    /// What minijinja writes for a template (its guarded program), whether or not it has a plan:
    /// the text and empty emissions, or the error's message.
    pub fn render_with_engine(&self, name: &str, context: &Value) -> Result<(String, u32), String> {
        self.render_engine(name, context)
            .map(|r| (r.text, r.empty_emissions))
            .map_err(|e| e.to_string())
    }

    /// What minijinja decides for a gate, or the error's message.
    pub fn gate_with_engine(&self, name: &str, context: &Value) -> Result<bool, String> {
        self.render_gate(name, context).map_err(|e| e.to_string())
    }
}
