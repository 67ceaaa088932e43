//! Templates and gates for promptstack: one minijinja environment per agent, strict about
//! undefined values, with engine-free evaluators that answer where they know minijinja's answer.
//!
//! This crate is internal to promptstack: its API is what `promptstack-core` needs and may change
//! with it. Applications use `promptstack_core` (or the `promptstack` facade), which re-exports
//! the public records, layers and limits below at their own paths.
//!
//! The pipeline, as the core drives it:
//!
//! 1. [`TemplateSet::new`], then [`TemplateSet::add`] and [`TemplateSet::add_gate`] for each
//!    block text and gate (`when`) of an agent: each is checked (its operators, its nesting),
//!    compiled with its guards (`guard`, `program`: bounded time and memory), and planned
//!    (`plan`, `gate`) when it is in the simple subset the engine-free evaluators know;
//! 2. per send, the core builds a [`Context`] of the roots ([`Val`]: the send's records read
//!    where they lie, through [`ToolsRoot`] for the toolset) and [`VariableFacts`] for the
//!    agent's [`spec::VariableSpec`]s;
//! 3. [`TemplateSet::render_into`] and [`SimpleGate`]/[`GateCode`] answer from the plan where
//!    there is one, and from minijinja otherwise: the same bytes either way.
//!
//! Block texts are Jinja templates; gates are Jinja expressions compiled as tiny templates so
//! they share the environment, the filters ([`layers`]) and the static analysis. Rendering counts
//! every emitted value that came out empty (`none`, `""`), so the assembler can warn about it;
//! `none` renders as nothing rather than the word "none".
//!
//! # What lives here, and why
//!
//! The layer's dependencies go down: this crate does not depend on `promptstack-core`. What the
//! layer reads and has no core dependency of its own moved here with it, and the core re-exports
//! each item at its old public path:
//!
//! - [`context`]: the send's records the evaluators read in place (a skill, a context file,
//!   the moment of the send);
//! - [`spec`]: a variable's declaration (stability, trust, shape) and the limits on an
//!   expression's operators and a template's nesting, which the spec loader also checks;
//! - [`layers`] and [`sites`]: the filters registered into every environment, which the
//!   evaluators apply as the filters do;
//! - [`text`]: quoting input for messages (the records' and shapes' parse errors quote it);
//! - `room`: the fuel and memory accounting a render and its filters share.
//!
//! What wraps core internals stays in the core and is read through a trait: the toolset, as
//! [`ToolsRoot`]. The roots the layer does not read in place are built by the core with
//! [`to_value`].
//!
//! ```
//! use promptstack_template::{Context, TemplateSet, Val, Whitespace, to_value};
//!
//! let mut set = TemplateSet::new(Whitespace::default());
//! set.add("greet".into(), "Hello, {{ user.name | escape_xml }}!".into()).unwrap();
//! let template = set.template("greet".into());
//! let user = to_value(serde_json::json!({"name": "Ada & co"}));
//! let ctx = Context::new([("user", Val::Value(user))]);
//! let mut out = String::new();
//! set.render_into(&template, &ctx, &set.budget(0), &mut out).unwrap();
//! assert_eq!(out, "Hello, Ada &amp; co!");
//! ```

pub mod context;
pub mod layers;
pub mod sites;
pub mod spec;
pub mod text;

mod room;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::context::{Now, Skill, format_offset};
use crate::room::{BYTES_PER_FUEL, ensure_room, ensure_value_fits, out_of_room, room};
use crate::spec::{MAX_EXPRESSION_OPERATORS, VariableSpec};

std::thread_local! {
    /// Empty emissions of the render running on this thread. Renders do not nest, so one counter
    /// per thread is enough; it is reset before and read after each render.
    static EMPTY_EMISSIONS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

mod gate;
mod guard;
mod plan;
mod program;
mod val;

pub use gate::{GateCode, GateContext, SimpleGate};
pub use val::{
    Context, Declared, ROOT_INDICES, ToolsRoot, VARIABLES, Val, VariableFacts, Variables,
    named_entry, same_name,
};

/// The most fuel one render may use, whatever the memory allowed: an instruction costs one fuel,
/// so a runaway loop fails instead of hanging.
pub(crate) const MAX_FUEL: u64 = 5_000_000;

/// The memory the templates of one assembly may use unless the agent says otherwise: 64 MiB.
pub const DEFAULT_MEMORY: u64 = 64 * 1024 * 1024;

/// The compiled templates and gates of one agent.
#[derive(Clone)]
pub struct TemplateSet {
    env: Environment<'static>,
    /// The syntax the templates are parsed with, for planning them.
    syntax: minijinja::syntax::SyntaxConfig,
    /// Every template by name, with its plan when it has one (see [`plan`]).
    plans: HashMap<String, Option<Arc<plan::Plan>>>,
    /// Every template and gate by name, compiled with its guards (see [`guard`]): what renders
    /// run. The environment keeps the same sources, compiled by minijinja, for their static
    /// analysis.
    programs: HashMap<String, Arc<program::Program>>,
    /// The memory the templates of one assembly may use; see [`TemplateSet::set_memory`].
    memory: u64,
    /// The agent's variables, which the plans resolve `variables.NAME` against.
    declared: Declared,
    /// The atoms of every simple gate, which their [`GateCode`]s read.
    gate_atoms: gate::GateAtoms,
}

/// What the renders of one assembly may still keep: the rendered texts together may take half of
/// the template memory (the other half bounds the data of any one render, through its fuel).
pub struct RenderBudget {
    left: std::cell::Cell<u64>,
    memory: u64,
}

impl RenderBudget {
    /// Takes `bytes` of rendered text from the budget.
    fn spend(&self, bytes: usize) -> Result<(), minijinja::Error> {
        let bytes = bytes as u64;
        if bytes > self.left.get() {
            self.left.set(0);
            return Err(minijinja::Error::new(
                minijinja::ErrorKind::InvalidOperation,
                format!(
                    "the templates of this assembly rendered more than {} bytes of text, half \
                     of the template memory limit ({} bytes)",
                    self.memory / 2,
                    self.memory
                ),
            ));
        }
        self.left.set(self.left.get() - bytes);
        Ok(())
    }

    /// The bytes of rendered text taken so far.
    pub fn spent(&self) -> u64 {
        self.memory / 2 - self.left.get()
    }
}

/// How templates treat the whitespace around their tags (the spec's render options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Whitespace {
    /// Jinja `trim_blocks`: the first newline after a block tag is removed.
    pub trim_blocks: bool,
    /// Jinja `lstrip_blocks`: whitespace before a block tag at the start of a line is stripped.
    pub lstrip_blocks: bool,
}

impl Default for Whitespace {
    /// Both on, as the spec's render options default to.
    fn default() -> Self {
        Self {
            trim_blocks: true,
            lstrip_blocks: true,
        }
    }
}

/// A template of a set by its name, with its plan when it has one, found once when the agent is
/// compiled, so that rendering it looks nothing up.
#[derive(Debug, Clone)]
pub struct Template {
    name: String,
    plan: Option<Arc<plan::Plan>>,
    program: Option<Arc<program::Program>>,
}

impl Template {
    /// The template's name in its set.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A rendered template and how many of its emitted values were empty.
pub(crate) struct Rendered {
    pub text: String,
    pub empty_emissions: u32,
}

impl TemplateSet {
    /// An empty set whose templates treat whitespace as `options` say, with the layer filters
    /// registered ([`layers`]) and the default template memory ([`DEFAULT_MEMORY`]).
    pub fn new(options: Whitespace) -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::None);

        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(options.trim_blocks)
            .lstrip_blocks(options.lstrip_blocks)
            .keep_trailing_newline(true)
            .build()
            .unwrap_or_default();
        env.set_syntax(syntax.clone());
        // `contains`: whether a sequence holds an item (or a string a substring), for filters such as
        // `skills | selectattr('tags', 'contains', 'widget')`.
        env.add_test("contains", |container: Value, item: Value| -> bool {
            match (container.as_str(), item.as_str()) {
                (Some(haystack), Some(needle)) => haystack.contains(needle),
                _ => container
                    .try_iter()
                    .map(|mut items| items.any(|v| v == item))
                    .unwrap_or(false),
            }
        });
        layers::register(&mut env);
        env.set_formatter(|out, state, value| {
            let empty = value.is_none()
                || value.is_undefined()
                || value.as_str().is_some_and(str::is_empty);
            if empty {
                EMPTY_EMISSIONS.with(|n| n.set(n.get().saturating_add(1)));
                if value.is_none() {
                    return Ok(());
                }
            }
            // Containers are written item by item, each checked against the fuel first: a lazily
            // repeated list (`[s] * n`) is small until it is written out.
            if value.as_object().is_some() {
                return write_bounded(state, out, value);
            }
            minijinja::escape_formatter(out, state, value)
        });
        env.add_filter("join", join_filter);
        env.add_filter("string", string_filter);
        guard::register(&mut env);
        let mut set = Self {
            env,
            syntax,
            plans: HashMap::new(),
            programs: HashMap::new(),
            memory: 0,
            declared: Declared::default(),
            gate_atoms: gate::GateAtoms::default(),
        };
        set.set_memory(DEFAULT_MEMORY);
        set
    }

    /// Sets the memory the templates of one assembly may use: each render's fuel pays for at most
    /// half of it in data (checked by minijinja before every allocation of known size, and by the
    /// filters here before theirs), and the texts the renders of one assembly keep may take the
    /// other half (see [`RenderBudget`]). The fuel is never more than `MAX_FUEL`.
    pub fn set_memory(&mut self, bytes: u64) {
        self.memory = bytes.max(2 * BYTES_PER_FUEL);
        self.env.set_fuel(Some(self.fuel()));
    }

    /// The memory the templates of one assembly may use.
    pub fn memory(&self) -> u64 {
        self.memory
    }

    /// A fresh budget for the rendered texts of one assembly, `spent` bytes of which are already
    /// taken (by a stable part rendered earlier).
    pub fn budget(&self, spent: u64) -> RenderBudget {
        RenderBudget {
            left: std::cell::Cell::new((self.memory / 2).saturating_sub(spent)),
            memory: self.memory,
        }
    }

    /// Declares the agent's variables, before any template or gate is added: a plan's and a
    /// simple gate's `variables.NAME` is then read by the place it is compiled to, from the
    /// [`VariableFacts`] of a send made with [`TemplateSet::declared`]'s table.
    /// `roots` are the names of the roots the agent's contexts hold, by their index (see
    /// [`Context::of_roots`]).
    pub fn declare_variables(
        &mut self,
        declared: &BTreeMap<String, VariableSpec>,
        roots: &'static [&'static str],
    ) {
        self.declared = Declared::of(declared).with_roots(roots);
    }

    /// The declared variables the plans and simple gates are compiled against.
    pub fn declared(&self) -> &Declared {
        &self.declared
    }

    /// Adds a template, and its plan when it has one.
    pub fn add(&mut self, name: String, source: String) -> Result<(), minijinja::Error> {
        let plan = plan::Plan::compile(&source, &self.syntax, &self.declared).map(Arc::new);
        let program = program::Program::compile(&name, &source, &self.syntax)?;
        self.env.add_template_owned(name.clone(), source)?;
        self.programs.insert(name.clone(), Arc::new(program));
        self.plans.insert(name, plan);
        Ok(())
    }

    /// Adds a gate expression, checking first that it is exactly one expression.
    ///
    /// The gate is stored as the template `{% if (EXPR) %}1{% endif %}`; the length of
    /// `GATE_PREFIX` is the offset of the expression in that text, for mapping error positions back.
    pub fn add_gate(&mut self, name: String, expression: &str) -> Result<(), minijinja::Error> {
        self.env.compile_expression(expression)?;
        let source = format!("{GATE_PREFIX}{expression}{GATE_SUFFIX}");
        self.env.add_template_owned(name.clone(), source.clone())?;
        let program = program::Program::compile(&name, &source, &self.syntax)?;
        self.programs.insert(name, Arc::new(program));
        Ok(())
    }

    /// Calls `name` with every identifier in the tags of every template and gate (see
    /// `template_names`); `false` if a source could not be scanned to its end.
    pub fn names(&self, name: &mut dyn FnMut(&str)) -> bool {
        self.env
            .templates()
            .all(|(_, template)| template_names(template.source(), name))
    }

    /// Calls `name` with every identifier in the tags of one template or gate (see
    /// `template_names`); `false` if it is unknown or could not be scanned to its end.
    pub fn names_in(&self, template: &str, name: &mut dyn FnMut(&str)) -> bool {
        self.env
            .get_template(template)
            .is_ok_and(|template| template_names(template.source(), name))
    }

    /// The variable paths a template reads, e.g. `user.name`, `tools`, `variables.voice_mode`.
    pub fn variables(&self, name: &str) -> HashSet<String> {
        self.env
            .get_template(name)
            .map(|t| t.undeclared_variables(true))
            .unwrap_or_default()
    }

    /// The template of this name, with its plan.
    pub fn template(&self, name: String) -> Template {
        let plan = self.plans.get(&name).cloned().flatten();
        let program = self.programs.get(&name).cloned();
        Template {
            name,
            plan,
            program,
        }
    }

    /// Renders a template against the context, appending its text to `out`, and returns how many
    /// of its emitted values were empty. On an error `out` is as it was.
    ///
    /// The text counts against `budget`; a render that would take more than is left fails.
    pub fn render_into(
        &self,
        template: &Template,
        ctx: &Context<'_>,
        budget: &RenderBudget,
        out: &mut String,
    ) -> Result<u32, minijinja::Error> {
        let name = template.name();
        let start = out.len();
        let planned = template
            .plan
            .as_ref()
            .and_then(|plan| plan.render_into(ctx, self.fuel(), out));
        #[cfg(any(test, feature = "testing"))]
        testing::note_render(name, ctx, planned.map(|empty| (&out[start..], empty)));
        if let Some(empty_emissions) = planned {
            debug_assert_eq!(
                Ok::<_, String>((&out[start..], empty_emissions)),
                self.render_engine(name, ctx.value())
                    .as_ref()
                    .map(|r| (r.text.as_str(), r.empty_emissions))
                    .map_err(|e| e.to_string()),
                "the plan and minijinja disagree on template `{name}`"
            );
            if let Err(error) = budget.spend(out.len() - start) {
                out.truncate(start);
                return Err(error);
            }
            return Ok(empty_emissions);
        }
        let rendered = match &template.program {
            Some(program) => self.run(program, ctx.value())?,
            None => self.render_engine(name, ctx.value())?,
        };
        budget.spend(rendered.text.len())?;
        if out.is_empty() && out.capacity() < rendered.text.len() {
            // Nothing to keep: the engine's text is taken whole, not copied.
            *out = rendered.text;
        } else {
            out.push_str(&rendered.text);
        }
        Ok(rendered.empty_emissions)
    }

    /// Renders a template with the engine (its guarded program), whether or not it has a plan.
    fn render_engine(&self, name: &str, ctx: &Value) -> Result<Rendered, minijinja::Error> {
        let program = self.program(name)?;
        self.run(program, ctx)
    }

    /// The guarded program of a template or gate.
    fn program(&self, name: &str) -> Result<&program::Program, minijinja::Error> {
        self.programs.get(name).map(|p| &**p).ok_or_else(|| {
            minijinja::Error::new(
                minijinja::ErrorKind::TemplateNotFound,
                format!("template {name:?} does not exist"),
            )
        })
    }

    /// Runs a program against the context, counting its empty emissions.
    fn run(&self, program: &program::Program, ctx: &Value) -> Result<Rendered, minijinja::Error> {
        EMPTY_EMISSIONS.with(|n| n.set(0));
        let text = program.render(&self.env, ctx.clone())?;
        Ok(Rendered {
            text,
            empty_emissions: EMPTY_EMISSIONS.with(|n| n.get()),
        })
    }

    /// Compiles a simple gate to its code over the agent's gate atoms.
    pub fn compile_gate(&mut self, gate: &SimpleGate) -> GateCode {
        self.gate_atoms.compile(gate)
    }

    /// Evaluates a gate in the context: by its code when it has one and the code decides (each
    /// atom read once for all the gates of the context), else by rendering the gate's template.
    ///
    /// The code charges no fuel, so it is used only while every render has far more fuel than
    /// the gates it decides could use (`gate::MAX_GATE_FUEL`); with less, a gate could run out
    /// of fuel in minijinja, and that outcome must stay the same.
    pub fn gate(
        &self,
        name: &str,
        code: Option<&GateCode>,
        ctx: &GateContext<'_, '_>,
    ) -> Result<bool, minijinja::Error> {
        if self.fuel() > gate::MAX_GATE_FUEL
            && let Some(open) = code.and_then(|code| code.decide(&self.gate_atoms, ctx))
        {
            debug_assert_eq!(
                Ok::<_, String>(open),
                self.render_gate(name, ctx.context().value())
                    .map_err(|e| e.to_string()),
                "the gate's code and minijinja disagree on gate `{name}`"
            );
            return Ok(open);
        }
        self.render_gate(name, ctx.context().value())
    }

    /// Evaluates a gate by rendering its template.
    fn render_gate(&self, name: &str, ctx: &Value) -> Result<bool, minijinja::Error> {
        Ok(self.program(name)?.render(&self.env, ctx.clone())? == "1")
    }

    /// The fuel of one render.
    fn fuel(&self) -> u64 {
        (self.memory / 2 / BYTES_PER_FUEL).min(MAX_FUEL)
    }
}

/// The offset of the first operator past [`MAX_EXPRESSION_OPERATORS`] in one tag of a template
/// source (`{{ … }}` or `{% … %}`; comments and `raw` blocks are skipped), if there is one.
///
/// This runs before the template is compiled: the compiler walks expressions recursively, so a
/// long flat chain such as `{{ 1 + 1 + … }}` would otherwise exhaust the stack. Over-counting is
/// harmless (a `-` of whitespace control counts, so does the `.` of a float); only a tag holding
/// more than the limit is refused, and no real template comes near it.
pub fn template_operators_exceeded(source: &str) -> Option<usize> {
    scan_tags(source, &mut |_| {})
}

/// Calls `name` with every identifier inside the tags of a template source (`{{ … }}`,
/// `{% … %}`), outside string literals, comments and `raw` blocks; `false` if a tag holds more
/// than [`MAX_EXPRESSION_OPERATORS`] operators (such a source does not compile), whose names past
/// the limit are not reported.
///
/// Every variable a template reads is among these names, so a name that no template of an agent
/// uses is one none of them can read. This is deliberately a superset (keywords, attribute and
/// assigned names are reported too) rather than minijinja's `undeclared_variables`, which treats
/// the name assigned by `{% set skills = skills | … %}` as never read.
pub(crate) fn template_names(source: &str, name: &mut dyn FnMut(&str)) -> bool {
    scan_tags(source, name).is_none()
}

/// Walks the tags of a template source, reporting identifiers to `name`; the offset of the first
/// operator past the limit, if there is one.
fn scan_tags(source: &str, name: &mut dyn FnMut(&str)) -> Option<usize> {
    let bytes = source.as_bytes();
    let mut at = 0;
    while let Some(found) = bytes[at..].iter().position(|&b| b == b'{') {
        let open = at + found;
        match bytes.get(open + 1) {
            Some(b'{') => match scan_expression(bytes, open + 2, Some(*b"}}"), name) {
                Ok(end) => at = end,
                Err(offset) => return Some(offset),
            },
            Some(b'%') => match scan_expression(bytes, open + 2, Some(*b"%}"), name) {
                Ok(end) => {
                    let tag = source[open + 2..end.saturating_sub(2).max(open + 2)]
                        .trim_matches(|c: char| c.is_whitespace() || c == '-' || c == '+');
                    at = if tag == "raw" {
                        source[end..]
                            .find("endraw")
                            .map_or(bytes.len(), |i| end + i + "endraw".len())
                    } else {
                        end
                    };
                }
                Err(offset) => return Some(offset),
            },
            Some(b'#') => {
                at = source[open + 2..]
                    .find("#}")
                    .map_or(bytes.len(), |i| open + 2 + i + 2);
            }
            _ => at = open + 1,
        }
    }
    None
}

/// The offset of the first operator past [`MAX_EXPRESSION_OPERATORS`] in a gate expression.
pub fn expression_operators_exceeded(expression: &str) -> Option<usize> {
    scan_expression(expression.as_bytes(), 0, None, &mut |_| {}).err()
}

/// Counts the operators of one expression from `at` to its closing delimiter (outside string
/// literals) or the end, reporting its identifiers to `name`: `Ok` with the offset after the
/// delimiter, or `Err` with the offset of the first operator past the limit.
fn scan_expression(
    bytes: &[u8],
    mut at: usize,
    close: Option<[u8; 2]>,
    name: &mut dyn FnMut(&str),
) -> Result<usize, usize> {
    let mut operators = 0usize;
    while let Some(&byte) = bytes.get(at) {
        if close.is_some_and(|close| byte == close[0] && bytes.get(at + 1) == Some(&close[1])) {
            return Ok(at + 2);
        }
        let start = at;
        match byte {
            b'"' | b'\'' => {
                at += 1;
                while let Some(&b) = bytes.get(at) {
                    at += 1;
                    match b {
                        b'\\' => at += 1,
                        _ if b == byte => break,
                        _ => {}
                    }
                }
                continue;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while bytes
                    .get(at)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
                {
                    at += 1;
                }
                let word = &bytes[start..at];
                if !matches!(word, b"and" | b"or" | b"not" | b"in" | b"is" | b"if") {
                    // ASCII letters, digits and `_` only, so always UTF-8.
                    if let Ok(word) = std::str::from_utf8(word) {
                        name(word);
                    }
                    continue;
                }
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'~' | b'|' | b'.' | b'[' | b'(' | b'<' | b'>'
            | b'=' | b'!' => at += 1,
            _ => {
                at += 1;
                continue;
            }
        }
        operators += 1;
        if operators > MAX_EXPRESSION_OPERATORS {
            return Err(start);
        }
    }
    Ok(at)
}

/// A writer that refuses to grow its output past a number of bytes.
struct Bounded<'w> {
    out: &'w mut dyn std::fmt::Write,
    left: u64,
    wanted: u64,
}

impl std::fmt::Write for Bounded<'_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let len = text.len() as u64;
        if len >= self.left {
            self.wanted = len;
            return Err(std::fmt::Error);
        }
        self.left -= len;
        self.out.write_str(text)
    }
}

/// Writes `value` as text into `out`, failing before writing more than this render may still
/// allocate.
fn write_bounded(
    state: &minijinja::State,
    out: &mut dyn std::fmt::Write,
    value: &Value,
) -> Result<(), minijinja::Error> {
    use std::fmt::Write as _;
    // Measured first: once the writer refuses, formatting may still walk the rest of the value.
    ensure_value_fits(state, value)?;
    let room = room(state);
    let mut bounded = Bounded {
        out,
        left: room,
        wanted: 0,
    };
    let written = write!(bounded, "{value}");
    let used = room - bounded.left;
    if written.is_err() {
        return Err(out_of_room(used.saturating_add(bounded.wanted), room));
    }
    Ok(())
}

/// `value` as a string: strings as they are, anything else written out within the fuel left.
fn to_bounded_string(state: &minijinja::State, value: &Value) -> Result<String, minijinja::Error> {
    if let Some(text) = value.as_str() {
        return Ok(text.to_owned());
    }
    let mut out = String::new();
    write_bounded(state, &mut out, value)?;
    Ok(out)
}

/// `string`, as minijinja's, but a container is written out within the fuel left instead of in
/// full before it is charged.
fn string_filter(state: &minijinja::State, value: &Value) -> Result<Value, minijinja::Error> {
    if value.is_undefined() {
        return Err(minijinja::Error::from(minijinja::ErrorKind::UndefinedError));
    }
    if value.as_str().is_some() {
        return Ok(value.clone());
    }
    to_bounded_string(state, value).map(Value::from)
}

/// `join(joiner="", attribute=None)`, as minijinja's, but the result is checked against the fuel
/// left before it grows, item by item (minijinja's own does so only with a joiner).
fn join_filter(
    state: &minijinja::State,
    value: &Value,
    joiner: Option<Value>,
    attribute: Option<&str>,
    kwargs: minijinja::value::Kwargs,
) -> Result<String, minijinja::Error> {
    let joiner = match joiner {
        Some(joiner) => Some(joiner),
        None => kwargs.get::<Option<Value>>("d")?,
    };
    let attribute = match attribute {
        Some(attribute) => Some(attribute.to_owned()),
        None => kwargs.get::<Option<String>>("attribute")?,
    };
    kwargs.assert_all_used()?;
    let joiner = match &joiner {
        Some(joiner) => to_bounded_string(state, joiner)?,
        None => String::new(),
    };
    let items = value.try_iter().map_err(|e| {
        minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("cannot join value of type {}", value.kind()),
        )
        .with_source(e)
    })?;
    let mut out = String::new();
    for (i, item) in items.enumerate() {
        state.consume_fuel(1)?;
        let item = match &attribute {
            Some(path) => attribute_at(&item, path)?,
            None => item,
        };
        if i > 0 {
            ensure_room(state, out.len().saturating_add(joiner.len()))?;
            out.push_str(&joiner);
        }
        match item.as_str() {
            Some(text) => {
                ensure_room(state, out.len().saturating_add(text.len()))?;
                out.push_str(text);
            }
            None => {
                ensure_value_fits(state, &item)?;
                let room = room(state).saturating_sub(out.len() as u64);
                let mut bounded = Bounded {
                    out: &mut out,
                    left: room,
                    wanted: 0,
                };
                use std::fmt::Write as _;
                if write!(bounded, "{item}").is_err() {
                    return Err(out_of_room(room.saturating_add(bounded.wanted), room));
                }
            }
        }
    }
    Ok(out)
}

/// The value at a dotted attribute path (`user.name`, `items.0`), undefined where it has none.
fn attribute_at(item: &Value, path: &str) -> Result<Value, minijinja::Error> {
    let mut value = item.clone();
    for part in path.split('.') {
        value = match part.parse::<usize>() {
            Ok(index) => value.get_item(&Value::from(index))?,
            Err(_) => value.get_attr(part)?,
        };
    }
    Ok(value)
}

/// What a gate's template starts with: the length of this prefix is the offset of the gate's
/// expression in it, for mapping error positions back (see [`TemplateSet::add_gate`]).
pub const GATE_PREFIX: &str = "{% if (";
const GATE_SUFFIX: &str = ") %}1{% endif %}";

/// Whether the value at a dotted path is empty (none, undefined, `""`, or an empty sequence).
pub fn path_is_empty(ctx: &Value, path: &str) -> bool {
    let mut value = ctx.clone();
    for part in path.split('.') {
        value = match value.get_attr(part) {
            Ok(v) => v,
            Err(_) => return true,
        };
    }
    value.is_none()
        || value.is_undefined()
        || value.as_str().is_some_and(str::is_empty)
        || value.len() == Some(0)
}

/// The `skills` root: the visible skills (`val::visible`: hidden skills never reach a template).
pub fn skills_value(skills: &[Skill]) -> Value {
    Value::from_object(val::visible(skills).map(skill_value).collect::<Vec<_>>())
}

/// One skill as the `skills` root shows it.
pub(crate) fn skill_value(skill: &Skill) -> Value {
    to_value(SkillView {
        name: &skill.name,
        slug: skill.slug(),
        description: &skill.description,
        instructions: &skill.instructions,
        tags: &skill.tags,
        location: skill.location.as_deref(),
        sites: &skill.sites,
    })
}

/// The `now` root: fields are formatted on access, so a template pays only for what it reads.
pub fn now_value(now: &Now) -> Value {
    Value::from_object(NowObject {
        now: *now,
        utc: false,
    })
}

/// `now` (the user's wall clock) or `now.utc`.
#[derive(Debug)]
struct NowObject {
    now: Now,
    utc: bool,
}

impl NowObject {
    const LOCAL_FIELDS: &'static [&'static str] = &[
        "rfc3339", "date", "time", "minute", "weekday", "month", "year", "offset", "utc",
    ];
    const UTC_FIELDS: &'static [&'static str] = &[
        "rfc3339", "date", "time", "minute", "weekday", "month", "year",
    ];
}

impl minijinja::value::Object for NowObject {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        now_field(&self.now, self.utc, key.as_str()?)
    }

    fn enumerate(self: &Arc<Self>) -> minijinja::value::Enumerator {
        minijinja::value::Enumerator::Str(if self.utc {
            Self::UTC_FIELDS
        } else {
            Self::LOCAL_FIELDS
        })
    }
}

/// The fields of the `now` root (the user's wall clock), as a template counts them.
pub(crate) const NOW_FIELDS: usize = NowObject::LOCAL_FIELDS.len();

/// A field of `now` (or of `now.utc`), formatted when it is read; `None` for a name that is not
/// one of its fields.
pub(crate) fn now_field(now: &Now, utc: bool, name: &str) -> Option<Value> {
    let civil = if utc { now.utc() } else { now.local() };
    // The short fields are written without allocating: a template value keeps a string of up
    // to 22 bytes inline.
    let text = |format: &str| {
        Some(match civil_text(&civil, format) {
            Some(text) => Value::from(text.as_str()),
            None => Value::from(civil.strftime(format).to_string()),
        })
    };
    match name {
        "rfc3339" if utc => Some(Value::from(
            now.timestamp().strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
        )),
        "rfc3339" => Some(Value::from(now.to_string())),
        "date" => text("%Y-%m-%d"),
        "time" => text("%H:%M"),
        "minute" => text("%Y-%m-%d %H:%M"),
        "weekday" => text("%A"),
        "month" => text("%B"),
        "year" => Some(Value::from(civil.year())),
        "offset" if !utc => Some(Value::from(format_offset(now.offset()))),
        "utc" if !utc => Some(Value::from_object(NowObject {
            now: *now,
            utc: true,
        })),
        _ => None,
    }
}

/// A date, a time or both as [`civil_text`] writes them: at most 16 bytes, kept on the stack.
struct CivilText {
    bytes: [u8; 16],
    len: usize,
}

impl CivilText {
    fn push(&mut self, byte: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever pushed.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }
}

/// `%Y-%m-%d`, `%H:%M` or `%Y-%m-%d %H:%M` of a date in the years 0–9999, written directly
/// (strftime reads its format on every call); `None` for any other format or year, which
/// strftime writes. A property test compares the two.
fn civil_text(civil: &jiff::civil::DateTime, format: &str) -> Option<CivilText> {
    let (date, time) = match format {
        "%Y-%m-%d" => (true, false),
        "%H:%M" => (false, true),
        "%Y-%m-%d %H:%M" => (true, true),
        _ => return None,
    };
    let year = u32::try_from(civil.year()).ok().filter(|y| *y <= 9999)?;
    // Zero-padded to `width` digits; every value here fits its width.
    fn push_digits(out: &mut CivilText, value: u32, width: u32) {
        for place in (0..width).rev() {
            let digit = (value / 10u32.pow(place) % 10) as u8;
            out.push(b'0' + digit);
        }
    }
    let mut out = CivilText {
        bytes: [0; 16],
        len: 0,
    };
    if date {
        push_digits(&mut out, year, 4);
        out.push(b'-');
        push_digits(&mut out, u32::from(civil.month().unsigned_abs()), 2);
        out.push(b'-');
        push_digits(&mut out, u32::from(civil.day().unsigned_abs()), 2);
    }
    if date && time {
        out.push(b' ');
    }
    if time {
        push_digits(&mut out, u32::from(civil.hour().unsigned_abs()), 2);
        out.push(b':');
        push_digits(&mut out, u32::from(civil.minute().unsigned_abs()), 2);
    }
    Some(out)
}

/// Joins roots into the context value templates render against.
pub(crate) fn context_value(roots: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
    Value::from_object(Roots(roots.into_iter().collect()))
}

/// The context templates render against: a dozen named roots, looked up by a linear scan (cheaper
/// than building a map for every send).
#[derive(Debug)]
struct Roots(Vec<(&'static str, Value)>);

impl minijinja::value::Object for Roots {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let key = key.as_str()?;
        self.0
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| value.clone())
    }

    fn enumerate(self: &Arc<Self>) -> minijinja::value::Enumerator {
        minijinja::value::Enumerator::Values(
            self.0.iter().map(|(name, _)| Value::from(*name)).collect(),
        )
    }
}

#[derive(Serialize)]
struct SkillView<'a> {
    name: &'a str,
    slug: &'a str,
    description: &'a str,
    instructions: &'a str,
    tags: &'a [String],
    location: Option<&'a str>,
    sites: &'a [String],
}

/// Converts any serialisable value into a template value.
pub fn to_value<T: Serialize>(value: T) -> Value {
    Value::from(minijinja::value::Serde(value))
}

/// Converts JSON into the template value [`to_value`] makes of it, without going through
/// serialisation: the same kinds (an unsigned number before a signed one before a float), strings,
/// sequences and maps, built directly (a property test holds the two equal).
pub(crate) fn json_value(value: &serde_json::Value) -> Value {
    use serde_json::Value as Json;
    match value {
        Json::Null => Value::from(()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Value::from(u),
            (None, Some(i)) => Value::from(i),
            (None, None) => Value::from(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(text) => Value::from(text.as_str()),
        Json::Array(items) => Value::from_object(items.iter().map(json_value).collect::<Vec<_>>()),
        Json::Object(map) => json_pairs(map),
    }
}

/// A map of JSON values by name as a template map, as serialisation makes it.
fn json_pairs<'a>(map: impl IntoIterator<Item = (&'a String, &'a serde_json::Value)>) -> Value {
    Value::from_pairs(
        map.into_iter()
            .map(|(k, v)| (Value::from(k.as_str()), json_value(v))),
    )
}

/// The template value of an optional JSON value (as `json_value` makes it): `none` when it is
/// absent.
pub fn json_value_or_none(value: Option<&serde_json::Value>) -> Value {
    value.map_or_else(|| Value::from(()), json_value)
}

/// A JSON map as a template map (the `settings` root).
pub fn json_map_value(map: &BTreeMap<String, serde_json::Value>) -> Value {
    json_pairs(map)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Any JSON: numbers of every representation, strings short and long, nested lists and maps.
    fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<f64>()
                .prop_filter("JSON numbers are finite", |f| f.is_finite())
                .prop_map(serde_json::Value::from),
            ".{0,40}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::from),
                prop::collection::btree_map(".{0,8}", inner, 0..5)
                    .prop_map(|map| serde_json::Value::Object(map.into_iter().collect())),
            ]
        })
    }

    /// Early years, the edges of a day and the last year written directly.
    #[test]
    fn dates_at_the_edges_are_strftimes() {
        for (year, month, day, hour, minute) in [
            (0, 1, 1, 0, 0),
            (5, 2, 3, 4, 5),
            (999, 12, 31, 23, 59),
            (9999, 12, 31, 23, 59),
        ] {
            let civil = jiff::civil::date(year, month, day).at(hour, minute, 0, 0);
            for format in ["%Y-%m-%d", "%H:%M", "%Y-%m-%d %H:%M"] {
                assert_eq!(
                    civil_text(&civil, format).map(|text| text.as_str().to_owned()),
                    Some(civil.strftime(format).to_string())
                );
            }
        }
        let before = jiff::civil::date(-1, 1, 1).at(0, 0, 0, 0);
        assert!(civil_text(&before, "%Y-%m-%d").is_none());
    }

    proptest! {
        /// The directly written dates and times are strftime's, at any instant jiff holds and
        /// any offset.
        #[test]
        fn dates_are_written_as_strftime_writes_them(
            seconds in jiff::Timestamp::MIN.as_second()..=jiff::Timestamp::MAX.as_second(),
            offset in -93_599i32..=93_599,
        ) {
            let instant = jiff::Timestamp::from_second(seconds).expect("in range");
            let offset = jiff::tz::Offset::from_seconds(offset).expect("in range");
            let civil = offset.to_datetime(instant);
            for format in ["%Y-%m-%d", "%H:%M", "%Y-%m-%d %H:%M"] {
                let strftime = civil.strftime(format).to_string();
                match civil_text(&civil, format) {
                    Some(text) => prop_assert_eq!(text.as_str(), strftime),
                    None => prop_assert!(!(0..=9999).contains(&civil.year())),
                }
            }
        }

        /// The direct conversion makes exactly the value serialisation makes: equal, of the same
        /// kind, and printed alike (which also shows the same concrete objects and map order).
        #[test]
        fn json_converts_as_serialisation_does(json in json()) {
            let direct = json_value(&json);
            let serialised = to_value(&json);
            prop_assert_eq!(direct.kind(), serialised.kind());
            prop_assert_eq!(format!("{direct:?}"), format!("{serialised:?}"));
            prop_assert_eq!(&direct, &serialised);
            let map: BTreeMap<String, serde_json::Value> =
                [("k".to_owned(), json.clone())].into();
            prop_assert_eq!(format!("{:?}", json_map_value(&map)), format!("{:?}", to_value(&map)));
            prop_assert_eq!(
                format!("{:?}", json_value_or_none(None)),
                format!("{:?}", to_value(None::<&serde_json::Value>))
            );
        }
    }
}
