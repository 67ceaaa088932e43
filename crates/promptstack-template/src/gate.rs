//! Simple gates decided without the template engine.
//!
//! Most gates are a variable path, `not`, `and`/`or`, `in`, a test (`is defined`, `is none`) or a
//! comparison with a literal. Rendering one through minijinja costs a template lookup, a VM state
//! and an output buffer for a one-bit answer, on every send; here such a gate is parsed once, when
//! the agent is compiled, and evaluated directly against the render's [`Context`], reading the
//! send's own data where a root is the send's (see [`super::val`]).
//!
//! The evaluator decides only what it knows minijinja decides the same way: it follows the
//! engine's own operations (`Value::is_true`, `==`, attribute lookup, containment in a string, a
//! sequence or a map) on defined values, directly on borrowed data where that gives the engine's
//! answer and on template values otherwise. Where strict undefined handling could fail (the
//! truthiness, containment or attributes of an undefined value), or a value is of a kind it does
//! not handle, it gives up (`None`) and the gate is rendered by minijinja as before, so every
//! result and every error is minijinja's. A property test (`tests` below) compares the two on
//! generated expressions and contexts (each over borrowed and over built roots), and in debug builds every decision is also rendered by
//! minijinja and compared, so every test that assembles an example checks its gates.
//!
//! An agent's simple gates are compiled together ([`GateAtoms`]): each is a `not`/`and`/`or` of
//! atoms (a path, a test, a comparison), the atoms kept once for all the gates, and each gate a
//! few operations over their indices ([`GateCode`]). The gates of one context ([`GateContext`])
//! read each atom at most once, and decide with a few branches over the answers remembered.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashMap;

use minijinja::value::{Value, ValueKind};

use super::val::{self, Attribute, Context, Declared, Val};

/// The longest sequence the evaluator searches for `in`: minijinja charges fuel per item it
/// compares, so a longer search is left to it (and its fuel limit).
const MAX_SEARCH: usize = 1024;

/// The longest string the evaluator searches for `in`, for the same reason (minijinja charges
/// its bytes).
const MAX_SEARCH_BYTES: usize = 64 * 1024;

/// The longest expression the evaluator parses.
const MAX_EXPRESSION_BYTES: usize = 4096;

/// More fuel than minijinja can spend on a gate the evaluator decides: at most a few instructions
/// per byte of a [`MAX_EXPRESSION_BYTES`] expression (64 fuel-units each), plus 32 units per item
/// searched and one per byte: under a tenth of this. Renders with less fuel than this
/// render their gates, so that running out of fuel fails as it always did.
pub(crate) const MAX_GATE_FUEL: u64 = 1 << 16;

/// A gate in the subset the evaluator decides: an expression of the gate grammar (see
/// [`SimpleGate::parse`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SimpleGate {
    expr: Expr,
}

/// An expression in the subset the evaluator handles: a gate's, or one of a planned template
/// (see [`super::plan`]), which adds lists, `+` of lists, conditional expressions, subscripts and
/// the project's string filters. The gate parser produces neither of those nor [`Expr::Texts`].
///
/// Names are resolved when the expression is compiled: a root to its place in every
/// [`Context`], a template's own variable to its slot in the render, an attribute to the field
/// of a borrowed record it names; so evaluating compares no names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    /// A name and the attributes read from it (`variables.custom_prompt`). An attribute that
    /// names a declared variable holds its place, so `variables.NAME` is read by place.
    Path {
        name: Name,
        attributes: Box<[Attribute]>,
    },
    /// A string literal.
    Text(Box<str>),
    /// Any other literal: an integer, `true`/`false` or `none`.
    Literal(Value),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// `item in container`, or `not in` when negated.
    In {
        item: Box<Expr>,
        container: Box<Expr>,
        negated: bool,
    },
    /// `left == right`, or `!=` when negated.
    Equal {
        left: Box<Expr>,
        right: Box<Expr>,
        negated: bool,
    },
    /// `value is test`, or `is not test` when negated.
    Is {
        value: Box<Expr>,
        test: Test,
        negated: bool,
    },
    /// A list literal, `[a, b]`.
    List(Vec<Expr>),
    /// A list literal of strings only, `["read", "bash"]`: read where it is, never built.
    Texts(Box<[String]>),
    /// `left + right` of two sequences.
    Concat(Box<Expr>, Box<Expr>),
    /// `then if test else otherwise`.
    Choose {
        test: Box<Expr>,
        then: Box<Expr>,
        otherwise: Box<Expr>,
    },
    /// `value[key]` of a map or a sequence.
    Item {
        value: Box<Expr>,
        key: Box<Expr>,
    },
    /// `value | filter`, for a filter that takes no argument.
    Filter {
        value: Box<Expr>,
        filter: Filter,
    },
}

/// A name an expression reads, resolved when it is compiled.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Name {
    text: Box<str>,
    /// The slot in which a context keeps the place of the name's root (see [`val::root_slot`]).
    root: Option<u8>,
    /// The slot of the planned template's own variable of this name, if the template binds it
    /// anywhere; while it is unbound there, the name is read from the roots.
    local: Option<u16>,
    /// Whether the name is `variables`, which a context holds apart (see
    /// [`Context::variables`]): its reads find it without a search.
    variables: bool,
    /// The index of the root of this name among the names the agent's contexts hold (see
    /// [`Context::of_roots`]), found when the expression is compiled.
    index: Option<u8>,
}

impl Name {
    /// A name, of a root or not, bound by the template at `local` if at all; a root's is
    /// resolved to its index among the `declared` roots.
    pub(crate) fn new(text: &str, local: Option<u16>, declared: &Declared) -> Self {
        Self {
            text: text.into(),
            root: val::root_slot(text),
            local,
            variables: text == val::VARIABLES,
            index: declared.root_index(text),
        }
    }
}

impl Expr {
    /// A path of a name and attributes, each attribute resolved against the declared variables
    /// (see [`Attribute::new`]).
    pub(crate) fn path(name: Name, attributes: &[String], declared: &Declared) -> Self {
        Expr::Path {
            name,
            attributes: attributes
                .iter()
                .map(|a| Attribute::new(a, declared))
                .collect(),
        }
    }

    /// A literal, strings kept as text.
    pub(crate) fn literal(value: Value) -> Self {
        match value.as_str() {
            Some(text) if value.kind() == ValueKind::String && !value.is_safe() => {
                Expr::Text(text.into())
            }
            _ => Expr::Literal(value),
        }
    }

    /// A list literal; one of plain string literals only is kept as their texts.
    pub(crate) fn list(items: Vec<Expr>) -> Self {
        if items.iter().all(|item| matches!(item, Expr::Text(_))) {
            let texts = items
                .into_iter()
                .map(|item| match item {
                    Expr::Text(text) => text.into_string(),
                    _ => String::new(),
                })
                .collect();
            return Expr::Texts(texts);
        }
        Expr::List(items)
    }
}

/// The filters the evaluator applies, by calling the same functions as the engine's filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Filter {
    EscapeXml,
    PosixPath,
    Guidelines,
    /// `escape_end_tags` with constant names, each one the engine's filter takes.
    EscapeEndTags(Box<[String]>),
}

impl Filter {
    /// The filter registered under `name` with these arguments, if the evaluator knows it:
    /// `escape_end_tags` takes constant tag names (as many as the engine's filter does), the
    /// others none. Anything else is left to the engine, whose error is the one to report.
    pub(crate) fn named(name: &str, args: &[Option<&str>]) -> Option<Self> {
        use crate::layers::escape;
        match (name, args) {
            ("escape_xml", []) => Some(Filter::EscapeXml),
            ("posix_path", []) => Some(Filter::PosixPath),
            ("guidelines", []) => Some(Filter::Guidelines),
            ("escape_end_tags", names)
                if (1..=escape::MAX_END_TAG_NAMES).contains(&names.len()) =>
            {
                names
                    .iter()
                    .map(|name| name.filter(|n| escape::is_tag_name(n)).map(str::to_owned))
                    .collect::<Option<Box<[String]>>>()
                    .map(Filter::EscapeEndTags)
            }
            _ => None,
        }
    }
}

/// Where an evaluation looks names up: a planned template's own variables (by slot), then the
/// roots of the context (by slot, or by name for a name that is no root's).
pub(crate) struct Scope<'s, 'a> {
    pub context: &'s Context<'a>,
    /// The template's own variables by slot: `None` where one is unbound.
    pub locals: &'s [Option<Val<'a>>],
}

impl<'a> Scope<'_, 'a> {
    /// The value of a bound local variable.
    #[inline]
    fn local(&self, name: &Name) -> Option<&Val<'a>> {
        self.locals.get(usize::from(name.local?))?.as_ref()
    }

    /// The value of a root, or `None` when the evaluator must not decide: a name the context
    /// lacks may be a global of the environment (`range`, …).
    #[inline]
    fn root(&self, name: &Name) -> Option<&Val<'a>> {
        if let Some(index) = name.index
            && let Some(found) = self.context.at_root(index)
        {
            return found.filter(|value| !value.is_undefined());
        }
        match name.root {
            Some(slot) => self.context.slot(slot, &name.text),
            None => self.context.root(&name.text),
        }
        .filter(|value| !value.is_undefined())
    }
}

/// The units of minijinja's fuel: one fuel is 64 units, a byte of data costs one.
pub(crate) const UNITS_PER_FUEL: u64 = 64;

/// What the evaluator charges for one node it evaluates: eight instructions, more than minijinja
/// compiles any node of the subset to.
pub(crate) const STEP: u64 = 8 * UNITS_PER_FUEL;

/// What the evaluator charges for one item it visits or creates: more than minijinja charges for
/// a slot (32 units), a visit (32) and a comparison (64) together.
const ITEM: u64 = 2 * UNITS_PER_FUEL + 32;

/// An upper bound of the fuel minijinja would spend on the work the evaluator did, in units; the
/// evaluator gives up as soon as it passes its limit, so that whatever it decides, minijinja
/// decides with fuel to spare, and nothing it builds outgrows the limit.
pub(crate) struct Meter {
    spent: u64,
    limit: u64,
}

impl Meter {
    pub(crate) fn new(limit: u64) -> Self {
        Self { spent: 0, limit }
    }

    /// Charges `units`; `None` once the limit is passed.
    #[inline]
    pub(crate) fn charge(&mut self, units: u64) -> Option<()> {
        self.spent = self.spent.saturating_add(units);
        (self.spent <= self.limit).then_some(())
    }

    /// Whether `units` more can be charged without passing the limit: work bounded by that
    /// may be done before it is charged exactly.
    #[inline]
    pub(crate) fn fits(&self, units: u64) -> bool {
        self.spent.saturating_add(units) <= self.limit
    }
}

/// The tests the evaluator knows, all of which only look at the value's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Test {
    Defined,
    Undefined,
    None,
}

impl SimpleGate {
    /// Parses a gate expression, or `None` when it uses anything outside the subset (filters,
    /// calls, subscripts, arithmetic, chained comparisons, escapes in strings, …).
    pub fn parse(expression: &str, declared: &Declared) -> Option<Self> {
        if expression.len() > MAX_EXPRESSION_BYTES {
            return None;
        }
        let tokens = tokenize(expression)?;
        let mut parser = Parser {
            tokens,
            at: 0,
            declared,
        };
        let expr = parser.or()?;
        (parser.at == parser.tokens.len()).then_some(SimpleGate { expr })
    }

    /// Decides the gate against the context, or `None` when minijinja must (see the module's
    /// documentation). Assemblies decide gates by their [`GateCode`]; this is its oracle.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn decide(&self, context: &Context<'_>) -> Option<bool> {
        let scope = Scope {
            context,
            locals: &[],
        };
        truthy(&self.expr.eval(&scope, &mut Meter::new(u64::MAX))?)
    }
}

/// The atoms of an agent's simple gates, each once: every part of a gate that is not `not`,
/// `and` or `or` (a path, a test, a comparison, a literal). A gate is compiled to [`GateCode`]
/// over their indices, so that the gates of one context read each atom at most once.
#[derive(Debug, Clone, Default)]
pub(crate) struct GateAtoms {
    atoms: Vec<Expr>,
    /// Each atom's index by its debug form, which tells literals of different kinds apart
    /// (`1` and `true` are equal as values).
    indices: HashMap<String, u32>,
}

/// One gate compiled over the agent's `GateAtoms`: its atoms and connectives in the order
/// `SimpleGate::decide` evaluates them, run with one three-valued register (true, false, or
/// undecided where an atom is minijinja's to answer).
#[derive(Debug, Clone, PartialEq)]
pub struct GateCode {
    ops: Box<[Op]>,
}

/// An operation of a [`GateCode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// The register becomes the atom's answer: its truthiness, or undecided.
    Atom(u32),
    /// The register is negated (undecided stays undecided).
    Not,
    /// `and`: unless the register is true, the next `skip` operations (the right operand) are
    /// skipped, for `and` gives its left operand then, and an undecided one is minijinja's.
    And { skip: u32 },
    /// `or`: unless the register is false, the right operand is skipped.
    Or { skip: u32 },
}

impl GateAtoms {
    /// Compiles a gate, adding the atoms it has that are not known yet.
    pub(crate) fn compile(&mut self, gate: &SimpleGate) -> GateCode {
        let mut ops = Vec::new();
        self.emit(&gate.expr, &mut ops);
        GateCode { ops: ops.into() }
    }

    fn emit(&mut self, expr: &Expr, ops: &mut Vec<Op>) {
        match expr {
            Expr::Not(inner) => {
                self.emit(inner, ops);
                ops.push(Op::Not);
            }
            Expr::And(left, right) | Expr::Or(left, right) => {
                self.emit(left, ops);
                // A placeholder, replaced once the right operand's length is known.
                let at = ops.len();
                ops.push(Op::Not);
                self.emit(right, ops);
                let skip = u32::try_from(ops.len() - at - 1).unwrap_or(u32::MAX);
                ops[at] = match expr {
                    Expr::And(..) => Op::And { skip },
                    _ => Op::Or { skip },
                };
            }
            atom => {
                let next = u32::try_from(self.atoms.len()).unwrap_or(u32::MAX);
                let index = *self.indices.entry(format!("{atom:?}")).or_insert(next);
                if index == next {
                    self.atoms.push(atom.clone());
                }
                ops.push(Op::Atom(index));
            }
        }
    }

    /// How many distinct atoms the gates compiled so far have.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.atoms.len()
    }

    /// The atom's answer in the context: remembered, or read now (and remembered if it can be).
    #[inline]
    fn answer(&self, index: u32, context: &GateContext<'_, '_>) -> Option<bool> {
        // A context keeps the answers of the first 64 atoms, a bit each; any later one is read
        // wherever a gate reads it.
        let bit = 1u64.checked_shl(index);
        if let Some(bit) = bit
            && context.read.get() & bit != 0
        {
            return (context.decided.get() & bit != 0).then(|| context.open.get() & bit != 0);
        }
        let scope = Scope {
            context: context.context,
            locals: &[],
        };
        let answer = self.atoms[index as usize].truth(&scope, &mut Meter::new(u64::MAX));
        if let Some(bit) = bit {
            context.read.set(context.read.get() | bit);
            if let Some(open) = answer {
                context.decided.set(context.decided.get() | bit);
                if open {
                    context.open.set(context.open.get() | bit);
                }
            }
        }
        answer
    }
}

impl GateCode {
    /// Decides the gate in the context, reading each of its atoms at most once per context;
    /// `None` where `SimpleGate::decide` gives `None`, and minijinja must decide.
    pub(crate) fn decide(&self, atoms: &GateAtoms, context: &GateContext<'_, '_>) -> Option<bool> {
        let mut register = None;
        let mut at = 0;
        while let Some(&op) = self.ops.get(at) {
            at += 1;
            match op {
                Op::Atom(index) => register = atoms.answer(index, context),
                Op::Not => register = register.map(|open| !open),
                Op::And { skip } if register != Some(true) => at += skip as usize,
                Op::Or { skip } if register != Some(false) => at += skip as usize,
                Op::And { .. } | Op::Or { .. } => {}
            }
        }
        register
    }
}

/// A context as its gates read it: the context, and the answers of the atoms read so far.
pub struct GateContext<'c, 'a> {
    context: &'c Context<'a>,
    /// The atoms read, by bit.
    read: Cell<u64>,
    /// Of those, the ones the evaluator decided.
    decided: Cell<u64>,
    /// Of those, the ones that are true.
    open: Cell<u64>,
}

impl<'c, 'a> GateContext<'c, 'a> {
    /// The context, with no atom read yet.
    #[inline]
    pub fn new(context: &'c Context<'a>) -> Self {
        Self {
            context,
            read: Cell::new(0),
            decided: Cell::new(0),
            open: Cell::new(0),
        }
    }

    /// The context the gates read.
    #[inline]
    pub fn context(&self) -> &'c Context<'a> {
        self.context
    }
}

impl Expr {
    /// The value of the expression, or `None` when minijinja must decide it (or the meter ran
    /// out). The value may be undefined (`x.missing`), which only a test may look at.
    pub(crate) fn eval<'a>(&'a self, scope: &Scope<'_, 'a>, meter: &mut Meter) -> Option<Val<'a>> {
        meter.charge(STEP)?;
        match self {
            Expr::Path { .. } => {
                let (start, attributes) = match self.path_start(scope)? {
                    Start::Value(start, attributes) => (start, attributes),
                    Start::Variable(found, rest) => {
                        meter.charge(STEP)?;
                        let value = found.map_or_else(Val::undefined, Val::json);
                        return read_attributes(value, rest, meter);
                    }
                };
                // The first attribute is read from the value where it is: a clone of a local
                // or a root would only be dropped once its attribute is read.
                match attributes.split_first() {
                    Some((first, rest)) => {
                        read_attributes(attribute(start, first, meter)?, rest, meter)
                    }
                    None => valid(start.clone()),
                }
            }
            Expr::Text(text) => Some(Val::Str(text)),
            Expr::Literal(value) => Some(Val::Value(value.clone())),
            Expr::Not(inner) => Some(boolean(!truthy(&inner.eval(scope, meter)?)?)),
            Expr::And(left, right) => {
                let left = left.eval(scope, meter)?;
                if truthy(&left)? {
                    right.eval(scope, meter)
                } else {
                    Some(left)
                }
            }
            Expr::Or(left, right) => {
                let left = left.eval(scope, meter)?;
                if truthy(&left)? {
                    Some(left)
                } else {
                    right.eval(scope, meter)
                }
            }
            Expr::In {
                item,
                container,
                negated,
            } => item.with_value(scope, meter, |item, meter| {
                container.with_value(scope, meter, |container, meter| {
                    Some(boolean(contains(container, item, meter)? != *negated))
                })
            }),
            Expr::Equal {
                left,
                right,
                negated,
            } => left.with_value(scope, meter, |left, meter| {
                right.with_value(scope, meter, |right, meter| {
                    if left.is_undefined() || right.is_undefined() {
                        return None;
                    }
                    meter.charge(size(left)?.saturating_add(size(right)?))?;
                    Some(boolean((left == right) != *negated))
                })
            }),
            Expr::Is {
                value,
                test,
                negated,
            } => value.with_value(scope, meter, |value, _| {
                let passes = match test {
                    Test::Defined => !value.is_undefined(),
                    Test::Undefined => value.is_undefined(),
                    Test::None => value.is_none(),
                };
                Some(boolean(passes != *negated))
            }),
            Expr::List(items) => {
                meter.charge(ITEM.saturating_mul(items.len() as u64))?;
                let mut values = Vec::with_capacity(items.len());
                for item in items {
                    let value = item.eval(scope, meter)?;
                    // An undefined item is the engine's to handle; so is a container, which the
                    // engine walks to check how deep the list nests (see `guard`).
                    if value.is_undefined()
                        || matches!(value.kind(), ValueKind::Seq | ValueKind::Map)
                    {
                        return None;
                    }
                    values.push(value);
                }
                Some(Val::List(values.into()))
            }
            Expr::Texts(texts) => {
                // Charged as the list of its literals: each item, and each literal's node.
                let len = texts.len() as u64;
                meter.charge(ITEM.saturating_mul(len))?;
                meter.charge(STEP.saturating_mul(len))?;
                Some(Val::Strs(texts))
            }
            Expr::Concat(..) => {
                let mut values = Vec::new();
                self.concat_into(scope, meter, &mut values)?;
                Some(Val::List(values.into()))
            }
            Expr::Choose {
                test,
                then,
                otherwise,
            } => {
                if truthy(&test.eval(scope, meter)?)? {
                    then.eval(scope, meter)
                } else {
                    otherwise.eval(scope, meter)
                }
            }
            Expr::Item { value, key } => value.with_value(scope, meter, |value, meter| {
                key.with_value(scope, meter, |key, meter| {
                    if key.is_undefined()
                        || !matches!(value.kind(), ValueKind::Map | ValueKind::Seq)
                    {
                        return None;
                    }
                    meter.charge(text_len(key))?;
                    valid(value.item(key)?)
                })
            }),
            Expr::Filter { value, filter } => {
                value.with_value(scope, meter, |value, meter| apply(filter, value, meter))
            }
        }
    }
}

impl Expr {
    /// The truthiness of the expression as an `if` sees it, or `None` when minijinja must decide
    /// it: what [`truthy`] of [`Expr::eval`] gives, a path's looked at where it is.
    #[inline]
    fn truth<'a>(&'a self, scope: &Scope<'_, 'a>, meter: &mut Meter) -> Option<bool> {
        match self {
            Expr::Path { .. } => self.with_value(scope, meter, |value, _| truthy(value)),
            _ => truthy(&self.eval(scope, meter)?),
        }
    }
}

/// Where a path starts, as [`Expr::path_start`] finds it.
enum Start<'v, 'a> {
    /// A local's or a root's value, and the attributes read from it.
    Value(&'v Val<'a>, &'a [Attribute]),
    /// `variables.NAME` (absent or present), and the attributes read from it.
    Variable(Option<&'a serde_json::Value>, &'a [Attribute]),
}

impl Expr {
    /// Where a path starts, looked up as [`Expr::eval`] looks it up but not copied; `None` for
    /// any other expression and for a name the evaluator leaves to the engine.
    // Always inlined: its answer is 32 bytes, which a call would return through memory.
    #[inline(always)]
    fn path_start<'v, 'a>(&'a self, scope: &'v Scope<'_, 'a>) -> Option<Start<'v, 'a>> {
        let Expr::Path { name, attributes } = self else {
            return None;
        };
        if let Some(local) = scope.local(name) {
            return Some(Start::Value(local, attributes));
        }
        // `variables.NAME` of the context's variables: read by its compiled place, found without
        // looking the root up among the others.
        if name.variables
            && let Some(variables) = scope.context.variables()
            && let Some((first, rest)) = attributes.split_first()
        {
            return Some(Start::Variable(variables.read(first), rest));
        }
        Some(match (scope.root(name)?, attributes.split_first()) {
            (Val::Variables(variables), Some((first, rest))) => {
                Start::Variable(variables.read(first), rest)
            }
            (root, _) => Start::Value(root, attributes),
        })
    }

    /// The string a short path (`guideline`, `skill.name`, `variables.cwd`: a name and at most
    /// one attribute) names when it is one of the send's strings, read where it is. `Some` only
    /// where [`Expr::eval`] gives that [`Val::Str`], charging [`Expr::path_steps`]; `None` for
    /// every other expression or value, which `eval` is then to evaluate. It charges nothing.
    #[inline]
    pub(crate) fn path_text<'a>(&'a self, scope: &Scope<'_, 'a>) -> Option<&'a str> {
        match self.path_start(scope)? {
            Start::Variable(found, []) => found?.as_str(),
            Start::Value(value, []) => value.as_text(),
            Start::Value(value, [only]) => value.field_text(only),
            _ => None,
        }
    }

    /// Evaluates the expression and hands its value to `then` by reference, with what
    /// [`Expr::eval`] gives and charges: a name alone or `variables.NAME` is looked at where it
    /// is, not copied out of the scope and read back (each copy a 32-byte value through memory).
    #[inline]
    fn with_value<'a, R>(
        &'a self,
        scope: &Scope<'_, 'a>,
        meter: &mut Meter,
        then: impl FnOnce(&Val<'a>, &mut Meter) -> Option<R>,
    ) -> Option<R> {
        match self.path_start(scope) {
            Some(Start::Value(value, [])) => {
                meter.charge(STEP)?;
                if value.kind() == ValueKind::Invalid {
                    return None;
                }
                then(value, meter)
            }
            Some(Start::Variable(found, [])) => {
                meter.charge(STEP.saturating_mul(2))?;
                then(&found.map_or_else(Val::undefined, Val::json), meter)
            }
            _ => {
                let value = self.eval(scope, meter)?;
                then(&value, meter)
            }
        }
    }

    /// What [`Expr::eval`] charges for a path: its node and each attribute it reads.
    pub(crate) fn path_steps(&self) -> u64 {
        match self {
            Expr::Path { attributes, .. } => STEP.saturating_mul(1 + attributes.len() as u64),
            _ => STEP,
        }
    }
}

/// `value.attribute`. Strict undefined handling fails on an attribute of an undefined value.
// This and the two helpers below are always inlined: each answers a 32-byte value, which a call
// would return through memory for the caller to read back.
#[inline(always)]
fn attribute<'a>(value: &Val<'a>, attribute: &Attribute, meter: &mut Meter) -> Option<Val<'a>> {
    if value.is_undefined() {
        return None;
    }
    meter.charge(STEP)?;
    value.field(attribute)
}

/// `value.a.b…` of the attributes in turn, then the value unless the engine calls it invalid.
#[inline(always)]
fn read_attributes<'a>(
    mut value: Val<'a>,
    attributes: &[Attribute],
    meter: &mut Meter,
) -> Option<Val<'a>> {
    for name in attributes {
        value = attribute(&value, name, meter)?;
    }
    valid(value)
}

/// The value, unless it is one the engine calls invalid (which only it may report).
#[inline(always)]
fn valid(value: Val<'_>) -> Option<Val<'_>> {
    (value.kind() != ValueKind::Invalid).then_some(value)
}

impl Expr {
    /// Appends the items of this `left + right` (whose node is charged) to `values`. A chain
    /// `a + b + c` makes one list rather than one for each `+`, charged as the engine's lists
    /// are: the left list's items once more for the outer `+`.
    fn concat_into<'a>(
        &'a self,
        scope: &Scope<'_, 'a>,
        meter: &mut Meter,
        values: &mut Vec<Val<'a>>,
    ) -> Option<()> {
        let Expr::Concat(left, right) = self else {
            return None;
        };
        if let Expr::Concat(..) = **left {
            meter.charge(STEP)?;
            let start = values.len();
            left.concat_into(scope, meter, values)?;
            meter.charge(ITEM.saturating_mul((values.len() - start) as u64))?;
        } else {
            let left = left.eval(scope, meter)?;
            push_items(&left, meter, values)?;
        }
        let right = right.eval(scope, meter)?;
        push_items(&right, meter, values)
    }
}

/// Appends the items of one side of a `+` of sequences to `values`, charging each.
fn push_items<'a>(side: &Val<'a>, meter: &mut Meter, values: &mut Vec<Val<'a>>) -> Option<()> {
    // Sequences only (tuples add by their own rule, strings and numbers too).
    if side.kind() != ValueKind::Seq || side.is_tuple() {
        return None;
    }
    meter.charge(ITEM.saturating_mul(side.len()? as u64))?;
    for item in side.items()? {
        if matches!(item.kind(), ValueKind::Undefined | ValueKind::Invalid) {
            return None;
        }
        values.push(item);
    }
    Some(())
}

/// A boolean result.
#[inline]
fn boolean<'a>(value: bool) -> Val<'a> {
    Val::Value(Value::from(value))
}

/// The bytes of a string value; 0 for any other kind.
fn text_len(value: &Val<'_>) -> u64 {
    value.as_str().map_or(0, |text| text.len() as u64)
}

/// What comparing a value may cost: its bytes, or its items for a container; `None` for a
/// container of unknown length.
fn size(value: &Val<'_>) -> Option<u64> {
    let container = match value {
        Val::Value(value) => value.as_object().is_some(),
        Val::Str(_) => false,
        _ => true,
    };
    if container {
        return Some(ITEM.saturating_mul(value.len()? as u64));
    }
    Some(text_len(value))
}

/// Escapes `text` with `escape` (which returns what it made and the length of the result),
/// charging the input's bytes and `charges_per_byte` units per byte of the result. The result is
/// at most six bytes a byte: with room for that, `escape` runs first and its result is charged
/// exactly; nearer the limit the result's length is counted without allocating and charged first,
/// so nothing is made past the limit. The total charged is the same either way.
pub(crate) fn escape_charged<'t, T>(
    text: &'t str,
    charges_per_byte: u64,
    meter: &mut Meter,
    escape: impl FnOnce(&'t str) -> (T, usize),
) -> Option<T> {
    escape_charged_by(
        text,
        charges_per_byte,
        6,
        meter,
        escape,
        crate::layers::escape::escaped_len,
    )
}

/// [`escape_charged`] for an escape whose result is at most `growth` bytes a byte and whose
/// result's length `escaped_len` counts without allocating.
pub(crate) fn escape_charged_by<'t, T>(
    text: &'t str,
    charges_per_byte: u64,
    growth: usize,
    meter: &mut Meter,
    escape: impl FnOnce(&'t str) -> (T, usize),
    escaped_len: impl FnOnce(&'t str) -> usize,
) -> Option<T> {
    let len = text.len() as u64;
    let cost =
        |escaped: usize| len.saturating_add((escaped as u64).saturating_mul(charges_per_byte));
    if meter.fits(cost(text.len().saturating_mul(growth))) {
        let (made, escaped) = escape(text);
        meter.charge(cost(escaped))?;
        Some(made)
    } else {
        meter.charge(cost(escaped_len(text)))?;
        Some(escape(text).0)
    }
}

/// Applies a filter by calling the function its engine filter calls; `None` for a value the
/// filter would refuse (the engine's error is the one to report).
fn apply<'a>(filter: &Filter, value: &Val<'a>, meter: &mut Meter) -> Option<Val<'a>> {
    use crate::layers::{escape, files, guidelines};
    match filter {
        Filter::EscapeXml => {
            let text = value.as_str()?;
            let escaped = escape_charged(text, 1, meter, |text| {
                let escaped = escape::escape_xml(text);
                let len = escaped.len();
                (escaped, len)
            })?;
            Some(match escaped {
                // Nothing to escape: the same plain string, without a copy.
                Cow::Borrowed(_) if !value.is_safe() => value.clone(),
                escaped => Val::Value(Value::from(escaped.into_owned())),
            })
        }
        Filter::EscapeEndTags(names) => {
            let text = value.as_str()?;
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            // The input is charged once for the search and the result as it is made; the result
            // is at most four bytes a byte, counted first when that would not fit.
            let escaped = escape_charged_by(
                text,
                1,
                4,
                meter,
                |text| {
                    let escaped = escape::escape_end_tags(text, &names);
                    let len = escaped.len();
                    (escaped, len)
                },
                |text| escape::end_tags_escaped_len(text, &names),
            )?;
            Some(match escaped {
                // Nothing to escape: the same plain string, without a copy.
                Cow::Borrowed(_) if !value.is_safe() => value.clone(),
                escaped => Val::Value(Value::from(escaped.into_owned())),
            })
        }
        Filter::PosixPath => {
            let text = value.as_str()?;
            // The input is charged, and so is the result, as long as the input.
            meter.charge((text.len() as u64).saturating_mul(2))?;
            Some(if text.contains('\\') || value.is_safe() {
                Val::Value(Value::from(files::posix_path(text)))
            } else {
                // No separator to change: the same plain string, without a copy.
                value.clone()
            })
        }
        Filter::Guidelines => {
            if value.kind() != ValueKind::Seq {
                return None;
            }
            meter.charge(ITEM.saturating_mul(value.len()? as u64))?;
            let collected: Vec<_>;
            let items: &[Val<'a>] = match value {
                Val::List(items) => items,
                _ => {
                    collected = value.items()?.collect();
                    &collected
                }
            };
            for item in items {
                let text = item.as_str()?;
                // Three times its bytes (read, copied, kept): an upper bound of the engine's work.
                meter.charge(3 * text.len() as u64)?;
            }
            let texts = items.iter().map(|item| item.as_str().unwrap_or_default());
            let kept = guidelines::kept(texts)
                .into_iter()
                .map(|(i, text)| match &items[i] {
                    // Kept whole: the same plain string, without a copy.
                    item if item.as_str().map(str::len) == Some(text.len()) && !item.is_safe() => {
                        item.clone()
                    }
                    _ => Val::Value(Value::from(text)),
                })
                .collect();
            Some(Val::List(kept))
        }
    }
}

/// Truthiness as an `if` sees it; strict undefined handling fails on an undefined value.
#[inline]
fn truthy(value: &Val<'_>) -> Option<bool> {
    (!value.is_undefined()).then(|| value.is_true())
}

/// `item in container` for a string, a sequence or a map holding defined values.
fn contains(container: &Val<'_>, item: &Val<'_>, meter: &mut Meter) -> Option<bool> {
    if item.is_undefined() || container.is_undefined() {
        return None;
    }
    // The engine guards a needle that could be written as text (see `guard`): a container
    // needle is walked, which is the engine's to charge; a string needle is charged its length.
    match item.kind() {
        ValueKind::Seq | ValueKind::Map => return None,
        ValueKind::String => {
            let needle = item.as_str()?;
            if needle.len() > MAX_SEARCH_BYTES {
                return None;
            }
            meter.charge(needle.len() as u64)?;
        }
        _ => {}
    }
    match container.kind() {
        ValueKind::String => {
            let text = container.as_str()?;
            if text.len() > MAX_SEARCH_BYTES {
                return None;
            }
            meter.charge(text.len() as u64)?;
            Some(text.contains(item.as_str()?))
        }
        ValueKind::Seq => {
            let len = container.len()?;
            if len > MAX_SEARCH {
                return None;
            }
            meter.charge(ITEM.saturating_mul(len as u64))?;
            // A string among the send's strings or JSON: compared as `==` compares two strings,
            // by their text, without making a value of each item.
            if let Some(needle) = item.as_str() {
                match container {
                    Val::Strs(texts) => return Some(texts.iter().any(|text| text == needle)),
                    Val::Json(serde_json::Value::Array(items)) => {
                        return Some(items.iter().any(|element| match element {
                            serde_json::Value::String(text) => text == needle,
                            other => Val::json(other) == *item,
                        }));
                    }
                    _ => {}
                }
            }
            let mut found = false;
            for element in container.items()? {
                if matches!(element.kind(), ValueKind::Undefined | ValueKind::Invalid) {
                    return None;
                }
                if element == *item {
                    found = true;
                    break;
                }
            }
            Some(found)
        }
        // A key is present when its lookup is defined: no map of the context holds an
        // undefined value (they come from serde, the send or the roots' objects).
        ValueKind::Map => container.has_key(item),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Literal(Value),
    Dot,
    Open,
    Close,
    Equal,
    NotEqual,
}

/// Splits an expression into tokens; `None` for anything outside the subset.
fn tokenize(expression: &str) -> Option<Vec<Token>> {
    let bytes = expression.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b' ' | b'\t' | b'\r' | b'\n' => at += 1,
            b'.' => {
                tokens.push(Token::Dot);
                at += 1;
            }
            b'(' => {
                tokens.push(Token::Open);
                at += 1;
            }
            b')' => {
                tokens.push(Token::Close);
                at += 1;
            }
            b'=' | b'!' if bytes.get(at + 1) == Some(&b'=') => {
                tokens.push(if byte == b'=' {
                    Token::Equal
                } else {
                    Token::NotEqual
                });
                at += 2;
            }
            b'"' | b'\'' => {
                let end = at + 1 + bytes[at + 1..].iter().position(|&b| b == byte)?;
                let text = &expression[at + 1..end];
                // Escapes are minijinja's to interpret.
                if text.contains('\\') {
                    return None;
                }
                tokens.push(Token::Literal(Value::from(text)));
                at = end + 1;
            }
            b'0'..=b'9' => {
                let len = bytes[at..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                // Floats, underscores and suffixes are minijinja's; so is a leading zero.
                if bytes
                    .get(at + len)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
                    || (len > 1 && byte == b'0')
                {
                    return None;
                }
                let number: i64 = expression[at..at + len].parse().ok()?;
                tokens.push(Token::Literal(Value::from(number)));
                at += len;
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let len = bytes[at..]
                    .iter()
                    .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                    .count();
                let word = &expression[at..at + len];
                tokens.push(match word {
                    "true" | "True" => Token::Literal(Value::from(true)),
                    "false" | "False" => Token::Literal(Value::from(false)),
                    "none" | "None" => Token::Literal(Value::from(())),
                    _ => Token::Name(word.to_owned()),
                });
                at += len;
            }
            _ => return None,
        }
    }
    Some(tokens)
}

/// A recursive-descent parser with minijinja's precedence: `or` < `and` < `not` < one comparison
/// (`==`, `!=`, `in`, `not in`) < one test (`is [not] defined|undefined|none`) < a path, a literal
/// or a parenthesised expression. Anything the grammar does not cover makes the parse fail.
struct Parser<'d> {
    tokens: Vec<Token>,
    at: usize,
    /// The variables the agent declares, which `variables.NAME` is resolved against.
    declared: &'d Declared,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn peek_name(&self, name: &str) -> bool {
        matches!(self.peek(), Some(Token::Name(n)) if n == name)
    }

    fn name_at(&self, offset: usize, name: &str) -> bool {
        matches!(self.tokens.get(self.at + offset), Some(Token::Name(n)) if n == name)
    }

    fn or(&mut self) -> Option<Expr> {
        let mut left = self.and()?;
        while self.peek_name("or") {
            self.at += 1;
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Some(left)
    }

    fn and(&mut self) -> Option<Expr> {
        let mut left = self.not()?;
        while self.peek_name("and") {
            self.at += 1;
            left = Expr::And(Box::new(left), Box::new(self.not()?));
        }
        Some(left)
    }

    fn not(&mut self) -> Option<Expr> {
        if self.peek_name("not") {
            self.at += 1;
            return Some(Expr::Not(Box::new(self.not()?)));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Option<Expr> {
        let left = self.operand()?;
        let gate = match self.peek() {
            Some(Token::Equal | Token::NotEqual) => {
                let negated = self.peek() == Some(&Token::NotEqual);
                self.at += 1;
                Expr::Equal {
                    left: Box::new(left),
                    right: Box::new(self.operand()?),
                    negated,
                }
            }
            Some(Token::Name(n)) if n == "in" => {
                self.at += 1;
                Expr::In {
                    item: Box::new(left),
                    container: Box::new(self.operand()?),
                    negated: false,
                }
            }
            Some(Token::Name(n)) if n == "not" && self.name_at(1, "in") => {
                self.at += 2;
                Expr::In {
                    item: Box::new(left),
                    container: Box::new(self.operand()?),
                    negated: true,
                }
            }
            _ => return Some(left),
        };
        // A second comparison would chain; minijinja's rules for that are its own.
        match self.peek() {
            Some(Token::Equal | Token::NotEqual) => None,
            Some(Token::Name(n)) if n == "in" || n == "not" => None,
            _ => Some(gate),
        }
    }

    fn operand(&mut self) -> Option<Expr> {
        let value = self.atom()?;
        if !self.peek_name("is") {
            return Some(value);
        }
        self.at += 1;
        let negated = self.peek_name("not");
        if negated {
            self.at += 1;
        }
        let test = match self.peek() {
            Some(Token::Name(n)) if n == "defined" => Test::Defined,
            Some(Token::Name(n)) if n == "undefined" => Test::Undefined,
            Some(Token::Literal(v)) if v.is_none() => Test::None,
            _ => return None,
        };
        self.at += 1;
        // minijinja reads almost any token after a test's name as the test's argument, so only
        // what ends the test here may follow it.
        let ends = match self.peek() {
            None | Some(Token::Close | Token::Equal | Token::NotEqual) => true,
            Some(Token::Name(n)) => n == "and" || n == "or",
            _ => false,
        };
        if !ends {
            return None;
        }
        Some(Expr::Is {
            value: Box::new(value),
            test,
            negated,
        })
    }

    fn atom(&mut self) -> Option<Expr> {
        match self.peek()?.clone() {
            Token::Open => {
                self.at += 1;
                let inner = self.or()?;
                if self.peek() != Some(&Token::Close) {
                    return None;
                }
                self.at += 1;
                Some(inner)
            }
            Token::Literal(value) => {
                self.at += 1;
                // An attribute of a literal (`'a'.upper`) is left to minijinja.
                (self.peek() != Some(&Token::Dot)).then(|| Expr::literal(value))
            }
            Token::Name(root) if !is_keyword(&root) => {
                self.at += 1;
                let mut attributes = Vec::new();
                while self.peek() == Some(&Token::Dot) {
                    self.at += 1;
                    match self.peek()?.clone() {
                        Token::Name(name) if !is_keyword(&name) => attributes.push(name),
                        _ => return None,
                    }
                    self.at += 1;
                }
                // A call or a subscript after the path is left to minijinja.
                if self.peek() == Some(&Token::Open) {
                    return None;
                }
                let name = Name::new(&root, None, self.declared);
                Some(Expr::path(name, &attributes, self.declared))
            }
            _ => None,
        }
    }
}

/// Words that are operators or tests in this grammar, never names.
fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "and" | "or" | "not" | "in" | "is" | "if" | "else" | "defined" | "undefined"
    )
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::{TemplateSet, Whitespace, to_value};
    use proptest::prelude::*;

    /// A JSON value of the kinds gates meet: none, booleans, numbers, strings (empty or not),
    /// lists of strings, and maps.
    fn json() -> impl Strategy<Value = serde_json::Value> {
        let word = prop::sample::select(vec!["", "x", "read", "ab", "a"]);
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            (-2i64..3).prop_map(serde_json::Value::from),
            word.clone().prop_map(serde_json::Value::from),
            prop::collection::vec(word.clone(), 0..4).prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(2, 12, 4, move |inner| {
            prop::collection::btree_map(
                prop::sample::select(vec!["x", "read", "y", "a"]).prop_map(str::to_owned),
                inner,
                0..4,
            )
            .prop_map(|map| serde_json::Value::Object(map.into_iter().collect()))
        })
    }

    /// Roots like an assembly's: named roots holding generated values, each present with
    /// probability `present` (shared with the plan tests).
    pub(crate) fn roots(
        json: impl Strategy<Value = serde_json::Value>,
        present: f64,
    ) -> impl Strategy<Value = Vec<(&'static str, serde_json::Value)>> {
        prop::collection::vec(prop::option::weighted(present, json), 4).prop_map(|values| {
            ["a", "b", "variables", "tools"]
                .into_iter()
                .zip(values)
                .filter_map(|(name, value)| Some((name, value?)))
                .collect()
        })
    }

    /// Paths into the roots [`roots`] makes, present or not, and one name no root has (`c`):
    /// the leaves the gate and plan expression generators share.
    const PATHS: [&str; 9] = [
        "a",
        "b",
        "c",
        "a.x",
        "a.read",
        "b.x.y",
        "variables.read",
        "variables.x",
        "tools",
    ];

    /// [`PATHS`], then `more`: the leaves of an expression generator.
    pub(crate) fn leaves(more: &[&'static str]) -> Vec<&'static str> {
        [&PATHS[..], more].concat()
    }

    /// The two contexts of the same roots: borrowed from the JSON, as an assembly reads the
    /// send's own data, and built as template values, as it reads every other root.
    pub(crate) fn contexts<'a>(roots: &'a [(&'static str, serde_json::Value)]) -> [Context<'a>; 2] {
        [
            Context::new(roots.iter().map(|(name, json)| (*name, Val::json(json)))),
            Context::new(
                roots
                    .iter()
                    .map(|(name, json)| (*name, Val::Value(to_value(json)))),
            ),
        ]
    }

    /// Gate contexts: each root absent half the time.
    fn context() -> impl Strategy<Value = Vec<(&'static str, serde_json::Value)>> {
        roots(json(), 0.5)
    }

    /// Gate expressions: mostly inside the subset, some outside it, some that do not compile.
    fn expression() -> impl Strategy<Value = String> {
        let leaf = prop::sample::select(leaves(&[
            "tools.a",
            "'read'",
            "\"x\"",
            "''",
            "1",
            "0",
            "true",
            "False",
            "none",
            "None",
            "range",
            "a.0",
            "a | length",
            "a[0]",
        ]))
        .prop_map(str::to_owned);
        leaf.prop_recursive(4, 24, 2, |inner| {
            prop_oneof![
                inner.clone().prop_map(|e| format!("not {e}")),
                inner.clone().prop_map(|e| format!("({e})")),
                (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} and {r}")),
                (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} or {r}")),
                (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} in {r}")),
                (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} not in {r}")),
                (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} == {r}")),
                (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} != {r}")),
                (
                    inner.clone(),
                    prop::sample::select(vec![
                        "is defined",
                        "is not defined",
                        "is none",
                        "is not none",
                        "is undefined",
                    ])
                )
                    .prop_map(|(e, t)| format!("{e} {t}")),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Wherever the evaluator decides a gate, minijinja decides it the same way (and does
        /// not fail).
        #[test]
        fn decides_as_minijinja_does(expression in expression(), roots in context()) {
            let mut templates = TemplateSet::new(Whitespace::default());
            if templates.add_gate("gate".into(), &expression).is_err() {
                return Ok(());
            }
            for context in contexts(&roots) {
                let engine = templates
                    .render_gate("gate", context.value())
                    .map_err(|e| e.to_string());
                if let Some(open) =
                    SimpleGate::parse(&expression, &Declared::default()).and_then(|g| g.decide(&context))
                {
                    prop_assert_eq!(Ok(open), engine, "{}", expression);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// The gates of a context decided by their code, each atom read once for them all, give
        /// what each gate decided alone gives (undecided included), and where they decide, what
        /// minijinja gives; also past the atoms a context remembers.
        #[test]
        fn code_decides_as_each_gate_alone(
            expressions in prop::collection::vec(expression(), 1..8),
            roots in context(),
            past_remembered in any::<bool>(),
            order in prop::collection::vec(any::<prop::sample::Index>(), 1..16),
        ) {
            let mut templates = TemplateSet::new(Whitespace::default());
            let mut atoms = GateAtoms::default();
            if past_remembered {
                for i in 0..64 {
                    let filler = SimpleGate::parse(&format!("a.x{i}"), &Declared::default());
                    atoms.compile(&filler.expect("in the subset"));
                }
                prop_assert_eq!(atoms.len(), 64);
            }
            let gates: Vec<_> = expressions
                .iter()
                .enumerate()
                .filter_map(|(i, expression)| {
                    let name = format!("g{i}");
                    templates.add_gate(name.clone(), expression).ok()?;
                    let simple = SimpleGate::parse(expression, &Declared::default())?;
                    let code = atoms.compile(&simple);
                    Some((name, expression, simple, code))
                })
                .collect();
            if gates.is_empty() {
                return Ok(());
            }
            for context in contexts(&roots) {
                let gate_context = GateContext::new(&context);
                // In a generated order, with repeats: an atom one gate read is answered from
                // memory for the next that has it.
                for index in &order {
                    let (name, expression, simple, code) = index.get(&gates);
                    let open = code.decide(&atoms, &gate_context);
                    prop_assert_eq!(open, simple.decide(&context), "{}", expression);
                    if let Some(open) = open {
                        let engine = templates
                            .render_gate(name, context.value())
                            .map_err(|e| e.to_string());
                        prop_assert_eq!(Ok(open), engine, "{}", expression);
                    }
                }
            }
        }
    }

    #[test]
    fn gates_share_their_atoms() {
        let mut atoms = GateAtoms::default();
        for expression in [
            "variables.custom_prompt",
            "not variables.custom_prompt",
            "skills and (variables.selected_tools is not defined or 'read' in variables.selected_tools)",
            "skills or variables.custom_prompt",
            "a == 1",
            "a == true",
        ] {
            let gate = SimpleGate::parse(expression, &Declared::default()).expect("in the subset");
            atoms.compile(&gate);
        }
        // `variables.custom_prompt`, `skills`, the test, the `in`, and the two comparisons: a
        // literal `1` and `true` are equal as values, but not the same atom.
        assert_eq!(atoms.len(), 6);
        let roots = [
            (
                "variables",
                serde_json::json!({"custom_prompt": "", "selected_tools": ["read"]}),
            ),
            ("skills", serde_json::json!([{"name": "a"}])),
            ("a", serde_json::json!(1)),
        ];
        for context in contexts(&roots) {
            let gates = GateContext::new(&context);
            let decide = |expression: &str, atoms: &mut GateAtoms| {
                let gate =
                    SimpleGate::parse(expression, &Declared::default()).expect("in the subset");
                let code = atoms.compile(&gate);
                code.decide(atoms, &gates)
            };
            let mut atoms = atoms.clone();
            assert_eq!(
                decide("not variables.custom_prompt", &mut atoms),
                Some(true)
            );
            assert_eq!(
                decide("variables.custom_prompt or skills", &mut atoms),
                Some(true)
            );
            assert_eq!(
                decide("skills and 'read' in variables.selected_tools", &mut atoms),
                Some(true)
            );
            assert_eq!(
                decide("a == true and not (a == 1)", &mut atoms),
                Some(false)
            );
            // Strict undefined: minijinja fails on a missing root's truthiness, after `or`
            // reaches it, but not where `and` stops first.
            assert_eq!(
                decide("variables.custom_prompt or nothing", &mut atoms),
                None
            );
            assert_eq!(
                decide("variables.custom_prompt and nothing", &mut atoms),
                Some(false)
            );
            assert_eq!(decide("not nothing or skills", &mut atoms), None);
        }
    }

    /// A skill and a context file for the path tests, their strings drawn from `word`.
    fn records() -> impl Strategy<Value = (crate::context::Skill, crate::context::ContextFile)> {
        let word = || prop::sample::select(vec!["", "x", "a<b & 'c'", "C:\\dir\\f"]);
        (
            word(),
            prop::option::of(word()),
            prop::option::of(word()),
            word(),
            word(),
        )
            .prop_map(|(name, slug, location, path, content)| {
                let skill = crate::context::Skill {
                    name: name.to_owned(),
                    slug: slug.map(str::to_owned),
                    description: format!("{name}!"),
                    instructions: String::new(),
                    tags: vec![name.to_owned()],
                    disable_model_invocation: false,
                    location: location.map(str::to_owned),
                    sites: Vec::new(),
                };
                let file = crate::context::ContextFile {
                    path: path.to_owned(),
                    content: content.to_owned(),
                };
                (skill, file)
            })
    }

    /// A path: a name that is a root, a bound local (a skill, a file, a JSON value), an unbound
    /// local or nothing, and zero to three attributes.
    fn path() -> impl Strategy<Value = (&'static str, Vec<&'static str>)> {
        let name = prop::sample::select(vec![
            "a",
            "b",
            "variables",
            "tools",
            "skill",
            "file",
            "json",
            "unbound",
            "nothing",
        ]);
        let attribute = prop::sample::select(vec![
            "x",
            "read",
            "y",
            "name",
            "slug",
            "description",
            "location",
            "tags",
            "path",
            "content",
            "missing",
        ]);
        (name, prop::collection::vec(attribute, 0..4))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        /// A path's value looked at where it is (`with_value`) is the value evaluating it gives,
        /// at the same charge; and wherever a path's text is read where it is, evaluating the
        /// path gives that very string and charges the steps the reading is charged.
        #[test]
        fn a_path_s_text_is_what_evaluating_it_gives(
            roots in context(),
            (skill, file) in records(),
            json in json(),
            paths in prop::collection::vec(path(), 1..6),
        ) {
            let locals = [
                Some(Val::Skill(&skill)),
                Some(Val::File(&file)),
                Some(Val::json(&json)),
                None,
            ];
            let slot = |name: &str| match name {
                "skill" => Some(0),
                "file" => Some(1),
                "json" => Some(2),
                "unbound" => Some(3),
                _ => None,
            };
            let exprs: Vec<Expr> = paths
                .iter()
                .map(|(name, attributes)| {
                    let attributes: Vec<String> =
                        attributes.iter().map(|a| (*a).to_owned()).collect();
                    Expr::path(Name::new(name, slot(name), &Declared::default()), &attributes, &Declared::default())
                })
                .collect();
            let mut answered = 0;
            for context in contexts(&roots) {
                {
                    let scope = Scope { context: &context, locals: &locals };
                    for (expr, path) in exprs.iter().zip(&paths) {
                        // Looked at in place or evaluated, the value and the charge are the same.
                        let mut evaluated = Meter::new(u64::MAX);
                        let value = expr.eval(&scope, &mut evaluated);
                        let mut looked_at = Meter::new(u64::MAX);
                        let seen = expr.with_value(&scope, &mut looked_at, |v, _| {
                            Some((v.to_value(), v.is_undefined()))
                        });
                        prop_assert_eq!(
                            seen,
                            value.as_ref().map(|v| (v.to_value(), v.is_undefined())),
                            "{:?}", path
                        );
                        prop_assert_eq!(looked_at.spent, evaluated.spent, "{:?}", path);
                        let Some(text) = expr.path_text(&scope) else { continue };
                        answered += 1;
                        let mut meter = Meter::new(u64::MAX);
                        let value = expr.eval(&scope, &mut meter);
                        prop_assert!(
                            matches!(value, Some(Val::Str(got)) if got == text),
                            "{:?}: {:?} read, {:?} evaluated", path, text, value
                        );
                        prop_assert_eq!(meter.spent, expr.path_steps(), "{:?}", path);
                    }
                }
            }
            // Not vacuous: the skill's and the file's fields are strings wherever bound.
            let reads_a_record = paths.iter().any(|(name, attributes)| {
                matches!(
                    (*name, attributes.as_slice()),
                    ("skill", ["name" | "description"]) | ("file", ["path" | "content"])
                )
            });
            prop_assert!(!reads_a_record || answered > 0);
        }
    }

    #[test]
    fn decides_the_common_gates() {
        let roots = [
            (
                "variables",
                serde_json::json!({"mode": "", "tools": ["read", "bash"]}),
            ),
            ("skills", serde_json::json!([{"name": "a"}])),
        ];
        for context in contexts(&roots) {
            decides_the_common_gates_in(&context);
        }
    }

    fn decides_the_common_gates_in(context: &Context<'_>) {
        for (expression, open) in [
            ("variables.mode", false),
            ("not variables.mode", true),
            ("skills and 'read' in variables.tools", true),
            (
                "variables.other is not defined or variables.other is none",
                true,
            ),
            ("'edit' not in variables.tools", true),
            ("variables.mode == ''", true),
        ] {
            let gate = SimpleGate::parse(expression, &Declared::default()).expect("in the subset");
            assert_eq!(gate.decide(context), Some(open), "{expression}");
        }
        // Strict undefined: minijinja fails on these, so the evaluator does not decide them.
        for undecided in ["nothing", "nothing.x", "'a' in nothing", "variables.other"] {
            let gate = SimpleGate::parse(undecided, &Declared::default()).expect("in the subset");
            assert_eq!(gate.decide(context), None, "{undecided}");
        }
    }

    #[test]
    fn parses_the_subset_and_refuses_the_rest() {
        for simple in [
            "variables.custom_prompt",
            "not variables.custom_prompt",
            "skills and (variables.selected_tools is not defined or variables.selected_tools is none or 'read' in variables.selected_tools)",
            "'x' not in tools",
            "model.id == \"gpt-4o\"",
            "model.context_window != 8000",
            "true",
        ] {
            assert!(
                SimpleGate::parse(simple, &Declared::default()).is_some(),
                "{simple}"
            );
        }
        for other in [
            "skills | length > 2",
            "a == b == c",
            "a if b else c",
            "tools['x']",
            "x.0",
            "f(x)",
            "'a\\'b' in x",
            "1.5 == x",
            "x is defined is none",
            "x is divisibleby(3)",
            "x is startingwith 'a'",
            "x is defined not in y",
            "x is none y",
            "a and",
            "(a",
            "a < b",
            "-a",
            "a ~ b",
        ] {
            assert!(
                SimpleGate::parse(other, &Declared::default()).is_none(),
                "{other}"
            );
        }
    }
}
