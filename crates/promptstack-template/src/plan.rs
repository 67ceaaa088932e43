//! Planned templates: simple template bodies written without the template engine.
//!
//! When a template is added, it is parsed again with minijinja's own parser (same syntax and
//! whitespace settings, so literal text is already trimmed as the engine trims it) and, if every
//! statement is in the subset below, kept as a plan: literal text ready to copy, `{{ expr }}` of
//! a string (or `none`), `{% if %}`/`{% elif %}`/`{% else %}`, `{% for x in seq if … %}` with
//! `{% else %}` (without `loop`), and `{% set %}` outside loops. Expressions are the gate
//! evaluator's ([`SimpleGate`]), with lists, `+` of lists, conditional expressions, subscripts
//! and the project's string filters.
//!
//! A plan follows the gate evaluator's discipline: it answers only where minijinja would give the
//! same bytes without an error, and gives up (`None`) anywhere else (an undefined value where
//! strict handling could fail, a value it does not emit, a name that may be a global, …), so the
//! template is rendered by minijinja and every result and error stays minijinja's. It meters an
//! upper bound of the fuel minijinja would spend and gives up past half of the render's fuel, so
//! a render that could run out of fuel, or outgrow the memory, is minijinja's too. In debug
//! builds every answer is compared with minijinja's render.

use std::sync::atomic::{AtomicUsize, Ordering};

use minijinja::machinery::ast::{self, Stmt};
use minijinja::syntax::SyntaxConfig;
use minijinja::value::ValueKind;

use super::gate::{Expr, Filter, Meter, Name, STEP, Scope, Test, UNITS_PER_FUEL, escape_charged};
use super::val::{Context, Declared, Val};
use crate::layers::escape;

/// The deepest nesting of statements and expressions a plan holds; a deeper template is left to
/// minijinja (its parser allows more).
const MAX_DEPTH: usize = 48;

/// The longest template source planned.
const MAX_SOURCE_BYTES: usize = 256 * 1024;

/// The most output a plan reserves up front from what it wrote before (see `Plan::reserve`).
const MAX_RESERVED_BYTES: usize = 1 << 20;

/// The most distinct names a plan binds (with `for` and `set`); a template binding more is left
/// to minijinja, so a render's own variables stay few.
const MAX_LOCALS: usize = 256;

/// The most names a template binds whose slots a render keeps on the stack.
const INLINE_LOCALS: usize = 8;

/// A template body written without the engine.
#[derive(Debug)]
pub(crate) struct Plan {
    nodes: Vec<Node>,
    /// How many distinct names the template binds: the slots of its own variables.
    locals: usize,
    /// The bytes of literal text in the plan, for the first allocation of the output.
    literal_bytes: usize,
    /// The length of the text the last render wrote: the next render of a template is usually
    /// about as long (context files and skills change little between sends), so reserving that
    /// much writes the output without growing it, and without copying what it holds each time.
    written: AtomicUsize,
}

#[derive(Debug, Clone)]
enum Node {
    /// Literal text, as the engine emits it (whitespace control applied).
    Text(Box<str>),
    /// `{{ expr }}`.
    Emit(Expr),
    If {
        test: Expr,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
    /// `{% for name in items if filter %}body{% else %}empty{% endfor %}`, the name bound in
    /// slot `local`.
    For {
        local: u16,
        items: Expr,
        filter: Option<Expr>,
        body: Vec<Node>,
        empty: Vec<Node>,
    },
    /// `{% set name = value %}`, the name bound in slot `local`.
    Set { local: u16, value: Expr },
}

/// A planned render: the text and how many emitted values were empty.
#[cfg(any(test, feature = "testing"))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Written {
    pub text: String,
    pub empty_emissions: u32,
}

impl Plan {
    /// Plans a template source, or `None` when any part of it is outside the subset (or it does
    /// not parse: the engine reports that).
    /// `variables.NAME` is resolved against the agent's `declared` variables.
    pub(crate) fn compile(
        source: &str,
        syntax: &SyntaxConfig,
        declared: &Declared,
    ) -> Option<Plan> {
        if source.len() > MAX_SOURCE_BYTES {
            return None;
        }
        let Stmt::Template(template) =
            minijinja::machinery::parse(source, "<plan>", syntax.clone()).ok()?
        else {
            return None;
        };
        let mut compiler = Compiler {
            literal_bytes: 0,
            locals: Vec::new(),
            declared,
        };
        compiler.bind(&template.children, 0)?;
        let nodes = compiler.statements(&template.children, 0, false)?;
        Some(Plan {
            nodes,
            locals: compiler.locals.len(),
            literal_bytes: compiler.literal_bytes,
            written: AtomicUsize::new(0),
        })
    }

    /// Writes the template against the context, or `None` when minijinja must render it: the
    /// plan met something it does not decide, or the work passed `fuel / 2` (the render's fuel).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn render(&self, context: &Context<'_>, fuel: u64) -> Option<Written> {
        let mut text = String::new();
        let empty_emissions = self.render_into(context, fuel, &mut text)?;
        Some(Written {
            text,
            empty_emissions,
        })
    }

    /// Appends the template's text to `out` and returns how many emitted values were empty, or
    /// `None` when minijinja must render it (the plan met something it does not decide, or the
    /// work passed `fuel / 2`, the render's fuel); `out` is then as it was.
    pub(crate) fn render_into<'a>(
        &'a self,
        context: &Context<'a>,
        fuel: u64,
        out: &mut String,
    ) -> Option<u32> {
        let start = out.len();
        out.reserve(self.reserve());
        // A template binds few names: their slots are kept on the stack, not allocated per render.
        let mut inline: [Option<Val<'a>>; INLINE_LOCALS] = std::array::from_fn(|_| None);
        let mut allocated = Vec::new();
        let locals = match inline.get_mut(..self.locals) {
            Some(locals) => locals,
            None => {
                allocated.resize(self.locals, None);
                &mut allocated[..]
            }
        };
        let mut run = Run {
            context,
            locals,
            meter: Meter::new(fuel.saturating_mul(UNITS_PER_FUEL) / 2),
            text: out,
            empty_emissions: 0,
        };
        let written = run.nodes(&self.nodes);
        let empty_emissions = run.empty_emissions;
        if written.is_none() {
            out.truncate(start);
            return None;
        }
        self.written.store(out.len() - start, Ordering::Relaxed);
        Some(empty_emissions)
    }

    /// The bytes to reserve for a render's output: the literal text, or what the last render
    /// wrote when that was more (up to [`MAX_RESERVED_BYTES`], so one huge send does not make
    /// every later one reserve as much).
    fn reserve(&self) -> usize {
        let written = self.written.load(Ordering::Relaxed).min(MAX_RESERVED_BYTES);
        self.literal_bytes.max(written)
    }
}

/// Turns minijinja's syntax tree into a plan.
struct Compiler<'d> {
    literal_bytes: usize,
    /// Every name the template binds, in the order of their slots.
    locals: Vec<String>,
    /// The variables the agent declares, which `variables.NAME` is resolved against.
    declared: &'d Declared,
}

impl Compiler<'_> {
    /// Gives a slot to every name the statements bind (`for` and `set` targets, at any depth),
    /// before any expression is compiled: a name read before its binding runs, or where its
    /// binding may not have run, is looked for in the slot first and then among the roots.
    fn bind(&mut self, stmts: &[Stmt<'_>], depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        for stmt in stmts {
            match stmt {
                Stmt::IfCond(cond) => {
                    self.bind(&cond.true_body, depth + 1)?;
                    self.bind(&cond.false_body, depth + 1)?;
                }
                Stmt::ForLoop(lp) => {
                    if let ast::Expr::Var(target) = &lp.target {
                        self.local(target.id)?;
                    }
                    self.bind(&lp.body, depth + 1)?;
                    self.bind(&lp.else_body, depth + 1)?;
                }
                Stmt::Set(set) => {
                    if let ast::Expr::Var(target) = &set.target {
                        self.local(target.id)?;
                    }
                }
                _ => {}
            }
        }
        Some(())
    }

    /// The slot of a name the template binds, given one if it has none yet (up to
    /// [`MAX_LOCALS`]).
    fn local(&mut self, name: &str) -> Option<u16> {
        let slot = match self.locals.iter().position(|local| local == name) {
            Some(slot) => slot,
            None if self.locals.len() < MAX_LOCALS => {
                self.locals.push(name.to_owned());
                self.locals.len() - 1
            }
            None => return None,
        };
        u16::try_from(slot).ok()
    }

    /// The slot of a name the template binds, if it binds it.
    fn bound(&self, name: &str) -> Option<u16> {
        let slot = self.locals.iter().position(|local| local == name)?;
        u16::try_from(slot).ok()
    }

    fn statements(&mut self, stmts: &[Stmt<'_>], depth: usize, in_loop: bool) -> Option<Vec<Node>> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut nodes = Vec::with_capacity(stmts.len());
        for stmt in stmts {
            nodes.push(match stmt {
                Stmt::EmitRaw(raw) => {
                    self.literal_bytes += raw.raw.len();
                    Node::Text(raw.raw.into())
                }
                Stmt::EmitExpr(emit) => Node::Emit(self.expression(&emit.expr, depth + 1)?),
                Stmt::IfCond(cond) => Node::If {
                    test: self.expression(&cond.expr, depth + 1)?,
                    then: self.statements(&cond.true_body, depth + 1, in_loop)?,
                    otherwise: self.statements(&cond.false_body, depth + 1, in_loop)?,
                },
                Stmt::ForLoop(lp) => {
                    let ast::Expr::Var(target) = &lp.target else {
                        return None;
                    };
                    if lp.recursive || !is_plain_name(target.id) {
                        return None;
                    }
                    Node::For {
                        local: self.bound(target.id)?,
                        items: self.expression(&lp.iter, depth + 1)?,
                        filter: match &lp.filter_expr {
                            Some(filter) => Some(self.expression(filter, depth + 1)?),
                            None => None,
                        },
                        body: self.statements(&lp.body, depth + 1, true)?,
                        empty: self.statements(&lp.else_body, depth + 1, true)?,
                    }
                }
                // A `set` inside a loop lives in the loop's frame, by the engine's scoping
                // rules; outside loops it lives to the end of the template.
                Stmt::Set(set) if !in_loop => {
                    let ast::Expr::Var(target) = &set.target else {
                        return None;
                    };
                    if !is_plain_name(target.id) {
                        return None;
                    }
                    Node::Set {
                        local: self.bound(target.id)?,
                        value: self.expression(&set.expr, depth + 1)?,
                    }
                }
                _ => return None,
            });
        }
        Some(nodes)
    }

    /// Turns an expression into the evaluator's form, or `None` outside the subset.
    fn expression(&mut self, expr: &ast::Expr<'_>, depth: usize) -> Option<Expr> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut sub = |e: &ast::Expr<'_>| self.expression(e, depth + 1).map(Box::new);
        Some(match expr {
            ast::Expr::Var(_) | ast::Expr::GetAttr(_) => {
                // A name and its attributes, read from the innermost attribute out.
                let mut attributes = Vec::new();
                let mut at = expr;
                while let ast::Expr::GetAttr(attr) = at {
                    attributes.push(attr.name.to_owned());
                    at = &attr.expr;
                }
                let ast::Expr::Var(var) = at else {
                    return None;
                };
                if !is_plain_name(var.id) || attributes.len() > MAX_DEPTH {
                    return None;
                }
                attributes.reverse();
                let name = Name::new(var.id, self.bound(var.id), self.declared);
                Expr::path(name, &attributes, self.declared)
            }
            ast::Expr::Const(c) => {
                // Strings, numbers, booleans and none; anything else is the engine's.
                if !matches!(
                    c.value.kind(),
                    ValueKind::String | ValueKind::Number | ValueKind::Bool | ValueKind::None
                ) {
                    return None;
                }
                Expr::literal(c.value.clone())
            }
            ast::Expr::GetItem(item) => Expr::Item {
                value: sub(&item.expr)?,
                key: sub(&item.subscript_expr)?,
            },
            ast::Expr::UnaryOp(op) => match op.op {
                ast::UnaryOpKind::Not => Expr::Not(sub(&op.expr)?),
                ast::UnaryOpKind::Neg => return None,
            },
            ast::Expr::BinOp(op) => {
                let (left, right) = (sub(&op.left)?, sub(&op.right)?);
                match op.op {
                    ast::BinOpKind::ScAnd => Expr::And(left, right),
                    ast::BinOpKind::ScOr => Expr::Or(left, right),
                    ast::BinOpKind::Eq | ast::BinOpKind::Ne => Expr::Equal {
                        left,
                        right,
                        negated: matches!(op.op, ast::BinOpKind::Ne),
                    },
                    ast::BinOpKind::In => Expr::In {
                        item: left,
                        container: right,
                        negated: false,
                    },
                    ast::BinOpKind::Add => Expr::Concat(left, right),
                    _ => return None,
                }
            }
            ast::Expr::Test(test) => {
                if !test.args.is_empty() {
                    return None;
                }
                Expr::Is {
                    value: sub(&test.expr)?,
                    test: match test.name {
                        "defined" => Test::Defined,
                        "undefined" => Test::Undefined,
                        "none" => Test::None,
                        _ => return None,
                    },
                    negated: false,
                }
            }
            ast::Expr::IfExpr(choose) => Expr::Choose {
                test: sub(&choose.test_expr)?,
                then: sub(&choose.true_expr)?,
                // Without `else` the engine yields an undefined value of its own kind.
                otherwise: sub(choose.false_expr.as_ref()?)?,
            },
            ast::Expr::Filter(filter) => {
                // Only constant string arguments are planned; any other is left to the engine.
                let mut args = Vec::with_capacity(filter.args.len());
                for arg in &filter.args {
                    match arg {
                        ast::CallArg::Pos(ast::Expr::Const(c)) => args.push(c.value.as_str()),
                        _ => return None,
                    }
                }
                Expr::Filter {
                    value: sub(filter.expr.as_ref()?)?,
                    filter: Filter::named(filter.name, &args)?,
                }
            }
            ast::Expr::List(list) => Expr::list(
                list.items
                    .iter()
                    .map(|item| self.expression(item, depth + 1))
                    .collect::<Option<_>>()?,
            ),
            _ => return None,
        })
    }
}

/// A name the plan may bind or read: not `loop` (bound by the engine inside loops) and not a
/// word the engine gives a meaning.
fn is_plain_name(name: &str) -> bool {
    !matches!(
        name,
        "loop" | "self" | "super" | "varargs" | "kwargs" | "caller"
    )
}

/// One planned render in progress.
struct Run<'c, 'a> {
    context: &'c Context<'a>,
    /// The template's own variables by slot: `None` while one is unbound.
    locals: &'c mut [Option<Val<'a>>],
    meter: Meter,
    /// The output, which may already hold text before this render's.
    text: &'c mut String,
    empty_emissions: u32,
}

impl<'a> Run<'_, 'a> {
    /// Where the render's expressions look names up, and the meter they are charged on.
    #[inline]
    fn scope(&mut self) -> (Scope<'_, 'a>, &mut Meter) {
        let scope = Scope {
            context: self.context,
            locals: self.locals,
        };
        (scope, &mut self.meter)
    }

    fn eval(&mut self, expr: &'a Expr) -> Option<Val<'a>> {
        let (scope, meter) = self.scope();
        expr.eval(&scope, meter)
    }

    /// The string a path names, read where it is (see [`Expr::path_text`]) and charged as
    /// evaluating it is; `None` when the expression is to be evaluated instead. That is also the
    /// answer when the charge runs the meter out, since the evaluation then stops at its first
    /// charge and the render gives up as it would have.
    #[inline(always)]
    fn path_text(&mut self, expr: &'a Expr) -> Option<&'a str> {
        let (scope, meter) = self.scope();
        let text = expr.path_text(&scope)?;
        meter.charge(expr.path_steps()).map(|()| text)
    }

    /// Whether an `if` or a loop's filter takes the expression for true.
    fn test(&mut self, expr: &'a Expr) -> Option<bool> {
        if let Some(text) = self.path_text(expr) {
            return Some(!text.is_empty());
        }
        let value = self.eval(expr)?;
        // Strict undefined handling fails on the truthiness of an undefined value.
        (!value.is_undefined()).then(|| value.is_true())
    }

    fn nodes(&mut self, nodes: &'a [Node]) -> Option<()> {
        for node in nodes {
            self.meter.charge(STEP)?;
            match node {
                Node::Text(text) => self.write(text)?,
                Node::Emit(Expr::Filter {
                    value,
                    filter: Filter::EscapeXml,
                }) => {
                    // Escaped straight into the text, charged as the filter's node, the filter
                    // (input and result) and the write of the result are.
                    self.meter.charge(STEP)?;
                    let evaluated;
                    let text = match self.path_text(value) {
                        Some(text) => text,
                        None => {
                            evaluated = self.eval(value)?;
                            evaluated.as_str()?
                        }
                    };
                    let out = &mut *self.text;
                    escape_charged(text, 2, &mut self.meter, |text| {
                        let start = out.len();
                        escape::escape_xml_into(text, out);
                        ((), out.len() - start)
                    })?;
                    if text.is_empty() {
                        self.empty_emissions = self.empty_emissions.saturating_add(1);
                    }
                }
                Node::Emit(expr) => {
                    if let Some(text) = self.path_text(expr) {
                        if text.is_empty() {
                            self.empty_emissions = self.empty_emissions.saturating_add(1);
                        }
                        self.write(text)?;
                        continue;
                    }
                    let value = self.eval(expr)?;
                    if value.is_none() {
                        self.empty_emissions = self.empty_emissions.saturating_add(1);
                    } else if let Some(text) = value.as_str() {
                        if text.is_empty() {
                            self.empty_emissions = self.empty_emissions.saturating_add(1);
                        }
                        self.write(text)?;
                    } else {
                        // Numbers, containers and undefined values are the engine's to format.
                        return None;
                    }
                }
                Node::If {
                    test,
                    then,
                    otherwise,
                } => {
                    if self.test(test)? {
                        self.nodes(then)?;
                    } else {
                        self.nodes(otherwise)?;
                    }
                }
                Node::For {
                    local,
                    items,
                    filter,
                    body,
                    empty,
                } => {
                    let items = self.eval(items)?;
                    if items.kind() != ValueKind::Seq {
                        return None;
                    }
                    let slot = usize::from(*local);
                    // The loop's frame: its name shadows whatever it named outside the loop,
                    // which it names again once the loop is over.
                    let outside = self.locals.get_mut(slot)?.take();
                    let mut any = false;
                    let mut next = items.items()?;
                    while next.next_into(self.locals.get_mut(slot)?) {
                        self.meter.charge(2 * STEP)?;
                        let item = self.locals.get(slot)?.as_ref()?;
                        if item.kind() == ValueKind::Invalid {
                            return None;
                        }
                        if let Some(filter) = filter
                            && !self.test(filter)?
                        {
                            continue;
                        }
                        any = true;
                        self.nodes(body)?;
                    }
                    *self.locals.get_mut(slot)? = outside;
                    if !any {
                        self.nodes(empty)?;
                    }
                }
                Node::Set { local, value } => {
                    let value = self.eval(value)?;
                    *self.locals.get_mut(usize::from(*local))? = Some(value);
                }
            }
        }
        Some(())
    }

    /// Writes text, charged a byte a unit as the engine charges its output.
    fn write(&mut self, text: &str) -> Option<()> {
        self.meter.charge(text.len() as u64)?;
        self.text.push_str(text);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::tests::contexts;
    use crate::{TemplateSet, Whitespace};
    use minijinja::value::Value;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    /// What the plan of `name` writes, if it has one and answers.
    fn planned(set: &TemplateSet, name: &str, context: &Context<'_>) -> Option<Written> {
        set.plans.get(name)?.as_ref()?.render(context, set.fuel())
    }

    /// What minijinja writes: the text and empty emissions, or the error's message.
    fn engine(set: &TemplateSet, name: &str, context: &Value) -> Result<Written, String> {
        set.render_engine(name, context)
            .map(|r| Written {
                text: r.text,
                empty_emissions: r.empty_emissions,
            })
            .map_err(|e| e.to_string())
    }

    /// Values of the kinds templates meet: none, booleans, numbers, strings with markup, lists of
    /// strings and maps of them.
    fn json() -> impl Strategy<Value = serde_json::Value> {
        let word = prop::sample::select(vec!["", "x", "read", "a<b & 'c'", "C:\\dir\\f", "  x  "]);
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            (-1i64..3).prop_map(serde_json::Value::from),
            word.clone().prop_map(serde_json::Value::from),
            word.clone().prop_map(serde_json::Value::from),
            prop::collection::vec(word.clone(), 0..4).prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(2, 12, 4, move |inner| {
            prop_oneof![
                prop::collection::btree_map(
                    prop::sample::select(vec!["x", "read", "y", "a"]).prop_map(str::to_owned),
                    inner.clone(),
                    0..4,
                )
                .prop_map(|map| serde_json::Value::Object(map.into_iter().collect())),
                prop::collection::vec(inner, 0..3).prop_map(serde_json::Value::from),
            ]
        })
    }

    /// Plan contexts: roots mostly present, so that loops and emissions have values to write.
    fn context() -> impl Strategy<Value = Vec<(&'static str, serde_json::Value)>> {
        super::super::gate::tests::roots(json(), 0.85)
    }

    /// Expressions: mostly in the subset, some outside it.
    fn expression() -> impl Strategy<Value = String> {
        let inside = prop::sample::select(super::super::gate::tests::leaves(&[
            "item",
            "v",
            "'read'",
            "'a<b'",
            "'x</B >y'",
            "''",
            "1",
            "0",
            "true",
            "none",
            "['x', 'read']",
            "[]",
        ]));
        let outside =
            prop::sample::select(vec!["range", "loop.index", "a | length", "a ~ b", "-a"]);
        let leaf = prop_oneof![
            24 => inside.prop_map(str::to_owned),
            1 => outside.prop_map(str::to_owned),
        ];
        leaf.prop_recursive(2, 8, 2, |inner| {
            let unary = prop::sample::select(vec![
                "is defined",
                "is not defined",
                "is none",
                "is not none",
                "| escape_xml",
                "| posix_path",
                "| guidelines",
                "| escape_end_tags('b', 'read')",
            ]);
            prop_oneof![
                4 => inner.clone().prop_map(|e| format!("not {e}")),
                4 => inner.clone().prop_map(|e| format!("({e})")),
                4 => (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} and {r}")),
                4 => (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} or {r}")),
                4 => (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} in {r}")),
                4 => (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} not in {r}")),
                4 => (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} == {r}")),
                4 => (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l} + {r}")),
                4 => (inner.clone(), inner.clone()).prop_map(|(l, r)| format!("{l}[{r}]")),
                4 => (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(t, l, r)| format!("({l} if {t} else {r})")),
                4 => (inner.clone(), unary).prop_map(|(e, t)| format!("{e} {t}")),
                // Outside the subset.
                1 => (inner.clone(), inner.clone()).prop_map(|(t, l)| format!("({l} if {t})")),
                1 => inner.clone().prop_map(|e| format!("{e} | upper")),
                1 => inner.clone().prop_map(|e| format!("{e} | escape_end_tags(a)")),
            ]
        })
    }

    /// Template sources: text with whitespace around tags, emissions, conditions, loops and
    /// assignments, mostly in the subset, some outside it. Loops and assignments bind names that
    /// other loops and assignments bind too, that are roots' names, or that are read before or
    /// outside their binding: nested loops with a repeated name, a local named like a root, a
    /// name bound in one branch only.
    fn template() -> impl Strategy<Value = String> {
        let text = prop::sample::select(vec!["", "x", "\n", "  ", " a\n  ", "<b>\n"]);
        let set_name = prop::sample::select(vec!["v", "v", "a", "variables", "item"]);
        let loop_name = prop::sample::select(vec!["item", "a", "v", "a", "variables"]);
        let leaf = prop_oneof![
            text.clone().prop_map(str::to_owned),
            (expression(), text.clone()).prop_map(|(e, t)| format!("{{{{ {e} }}}}{t}")),
            (expression(), text.clone()).prop_map(|(e, t)| format!("{t}{{{{- {e} -}}}}{t}")),
            (set_name, expression(), text.clone())
                .prop_map(|(name, e, t)| format!("{{% set {name} = {e} %}}{t}")),
        ];
        let leaf = prop_oneof![8 => leaf, 1 => Just("{{ loop.index }}".to_owned())];
        leaf.prop_recursive(2, 8, 3, move |inner| {
            let body = prop::collection::vec(inner, 0..3).prop_map(|parts| parts.concat());
            prop_oneof![
                (expression(), body.clone(), body.clone(), text.clone()).prop_map(
                    |(test, then, otherwise, t)| {
                        format!("{{% if {test} %}}{then}{t}{{% else %}}{otherwise}{{% endif %}}\n")
                    }
                ),
                (expression(), expression(), body.clone(), body.clone()).prop_map(
                    |(test, other, then, otherwise)| {
                        format!(
                            "  {{%- if {test} %}}\n{then}{{% elif {other} -%}}\n{otherwise}  {{% endif %}}\n"
                        )
                    }
                ),
                (loop_name.clone(), expression(), body.clone(), text.clone()).prop_map(
                    |(name, items, b, t)| {
                        format!("{{% for {name} in {items} %}}{t}{b}{{% endfor %}}\n")
                    }
                ),
                // The loop's name read again once the loop is over.
                (loop_name.clone(), expression(), body.clone()).prop_map(|(name, items, b)| {
                    format!("{{% for {name} in {items} %}}{b}{{{{ {name} }}}}{{% endfor %}}{{{{ {name} }}}}")
                }),
                (loop_name.clone(), expression(), expression(), body.clone(), body.clone()).prop_map(
                    |(name, items, filter, b, empty)| {
                        format!(
                            "{{% for {name} in {items} if {filter} %}}\n{b}{{% else %}}{empty}{{% endfor %}}"
                        )
                    }
                ),
                body,
            ]
        })
    }

    /// Wherever a plan answers, minijinja writes the same bytes (and does not fail); the plan
    /// answers for a good share of the generated templates and contexts, so the comparison is
    /// not vacuous.
    #[test]
    fn plans_write_as_minijinja_does() {
        let mut runner = TestRunner::new(Config {
            cases: 3000,
            failure_persistence: None,
            ..Config::default()
        });
        let answered = std::cell::Cell::new(0u32);
        let plans = std::cell::Cell::new(0u32);
        let strategy = (template(), context(), any::<bool>(), any::<bool>());
        runner
            .run(&strategy, |(source, roots, trim_blocks, lstrip_blocks)| {
                let mut set = TemplateSet::new(Whitespace {
                    trim_blocks,
                    lstrip_blocks,
                });
                if set.add("t".into(), source.clone()).is_err() {
                    return Ok(());
                }
                if set.planned().0 == 1 {
                    plans.set(plans.get() + 1);
                }
                for context in contexts(&roots) {
                    if let Some(written) = planned(&set, "t", &context) {
                        answered.set(answered.get() + 1);
                        prop_assert_eq!(
                            Ok(written),
                            engine(&set, "t", context.value()),
                            "{:?}",
                            source
                        );
                    }
                }
                Ok(())
            })
            .unwrap();
        // Generated templates are mostly in the subset, and random contexts often leave their
        // names undefined, so a plan answers a fair share of cases.
        println!("{} planned, {} answered", plans.get(), answered.get());
        assert!(plans.get() > 800, "{} templates planned", plans.get());
        assert!(answered.get() > 200, "{} renders answered", answered.get());
    }

    #[test]
    fn plans_the_subset_and_leaves_the_rest() {
        let syntax = SyntaxConfig::default();
        for planned in [
            "text only",
            "{{ a.b }} and {{ c | escape_xml }}",
            "{% if a %}x{% elif b is defined %}y{% else %}z{% endif %}",
            "{% for x in a if x %}{{ x }}{% else %}none{% endfor %}",
            "{% set t = a if a is not none else ['x'] %}{% for x in t + b %}{{ x }}{% endfor %}",
            "{{ m[k] }}",
            "{% raw %}{{{% endraw %}",
        ] {
            assert!(
                Plan::compile(planned, &syntax, &Declared::default()).is_some(),
                "{planned}"
            );
        }
        for other in [
            "{{ loop.index }}",
            "{% for x in a %}{{ loop.index }}{% endfor %}",
            "{% for x in a %}{% set y = x %}{% endfor %}",
            "{% for k, v in a %}{% endfor %}",
            "{{ a | upper }}",
            "{{ a ~ b }}",
            "{{ a if b }}",
            "{{ f(x) }}",
            "{% macro m() %}{% endmacro %}",
            "{{ a[1:] }}",
            "{{ -a }}",
            "{% if a",
        ] {
            assert!(
                Plan::compile(other, &syntax, &Declared::default()).is_none(),
                "{other}"
            );
        }
    }

    /// The engine's scoping, template by template: a loop's name shadows a root or an outer
    /// binding and is dropped at the loop's end, a `set` in a branch binds only when the branch
    /// runs, and a name read before its binding is the root's. Each is answered by the plan and
    /// written as minijinja writes it.
    #[test]
    fn binds_names_as_minijinja_scopes_them() {
        let roots = [
            ("a", serde_json::json!("root")),
            ("b", serde_json::json!(["p", "q"])),
            (
                "variables",
                serde_json::json!({"x": "vx", "read": ["r1", "r2"]}),
            ),
        ];
        for (source, expected) in [
            // Nested loops with a repeated name: the inner one shadows, the outer one returns.
            (
                "{% for a in b %}{{ a }}{% for a in variables.read %}({{ a }}){% endfor %}{{ a }};{% endfor %}{{ a }}",
                "p(r1)(r2)p;q(r1)(r2)q;root",
            ),
            // A local named like a root, bound in one branch only.
            (
                "{{ a }}{% if b %}{% set a = 'local' %}{% endif %}{{ a }}{% if not b %}{% set a = 'other' %}{% endif %}{{ a }}",
                "rootlocallocal",
            ),
            // A loop's name outside the loop is whatever it named before: a set, then a root.
            (
                "{% set v = 'set' %}{% for v in b %}{{ v }}{% endfor %}{{ v }}{% for variables in [variables.x] %}{{ variables }}{% endfor %}{{ variables.x }}",
                "pqsetvxvx",
            ),
            // `variables` shadowed by a local: its attributes are the local's.
            (
                "{{ variables.x }}{% set variables = variables.read if b else [] %}{{ variables[1] }}{% for variables in b %}{{ variables }}{% endfor %}",
                "vxr2pq",
            ),
            // A filtered loop: the name is bound while the filter is tested, and the else branch
            // runs outside the loop.
            (
                "{% for v in b if v == 'q' %}{{ v }}{% endfor %}{% for a in b if false %}{% else %}{{ a }}{% endfor %}",
                "qroot",
            ),
        ] {
            let mut set = TemplateSet::new(Whitespace::default());
            set.add("t".into(), source.to_owned()).unwrap();
            for context in contexts(&roots) {
                let written = planned(&set, "t", &context)
                    .unwrap_or_else(|| panic!("not answered: {source}"));
                assert_eq!(written.text, expected, "{source}");
                assert_eq!(Ok(written), engine(&set, "t", context.value()), "{source}");
            }
        }
    }

    #[test]
    fn gives_up_where_minijinja_could_fail_or_run_out() {
        let syntax = SyntaxConfig::default();
        let roots = [
            ("a", serde_json::json!({"x": "y", "n": 3})),
            ("items", serde_json::json!(["p", "q"])),
        ];
        for context in contexts(&roots) {
            gives_up_where_minijinja_could_fail_or_run_out_in(&syntax, &context);
        }
    }

    fn gives_up_where_minijinja_could_fail_or_run_out_in(
        syntax: &SyntaxConfig,
        context: &Context<'_>,
    ) {
        let plan =
            |source: &str| Plan::compile(source, syntax, &Declared::default()).expect(source);
        // Undefined names (globals or strict errors), numbers, and undefined emissions.
        for source in [
            "{{ missing }}",
            "{{ a.n }}",
            "{{ a.missing }}",
            "{% if a.z %}{% endif %}",
        ] {
            assert_eq!(plan(source).render(context, u64::MAX), None, "{source}");
        }
        let written = plan("{% for i in items %}<{{ i }}>{% endfor %}{{ a.x }}")
            .render(context, u64::MAX)
            .unwrap();
        assert_eq!(written.text, "<p><q>y");
        // The same template with too little fuel is left to minijinja.
        assert_eq!(
            plan("{% for i in items %}<{{ i }}>{% endfor %}").render(context, 8),
            None
        );
    }

    /// `escape_end_tags` with constant names is planned, and answers what the engine's filter
    /// makes, at every fuel from where it starts answering; other arguments are left to the engine.
    #[test]
    fn end_tags_are_escaped_as_the_filter_escapes_them() {
        let syntax = SyntaxConfig::default();
        let text = "a</b> </B\t> </bc> </x>".repeat(20);
        let expected = escape::escape_end_tags(&text, &["b", "x"]).into_owned();
        let context = Context::new(vec![("a", Val::Str(&text))]);
        let source = "{{ a | escape_end_tags('b', 'x') }}";
        let plan = Plan::compile(source, &syntax, &Declared::default()).expect(source);
        let mut answered_from = None;
        for fuel in (0..200).map(|step| step * 16) {
            match plan.render(&context, fuel) {
                Some(written) => {
                    assert_eq!(written.text, expected, "at {fuel}");
                    answered_from.get_or_insert(fuel);
                }
                None => assert!(answered_from.is_none(), "stops at {fuel}"),
            }
        }
        assert!(answered_from.is_some());
        for unplanned in [
            "{{ a | escape_end_tags(a) }}",
            "{{ a | escape_end_tags('1b') }}",
            "{{ a | escape_end_tags() }}",
        ] {
            assert!(
                Plan::compile(unplanned, &syntax, &Declared::default()).is_none(),
                "{unplanned}"
            );
        }
    }

    /// Escaping is charged exactly, whether the result is written first (room to spare) or its
    /// length is counted first (near the limit): with more fuel a plan never stops answering,
    /// and every answer is the escaped text.
    #[test]
    fn escaping_is_charged_the_same_near_the_limit() {
        let syntax = SyntaxConfig::default();
        let text = "a<b & \"c\" > 'd' ".repeat(40);
        let expected = escape::escape_xml(&text).into_owned();
        let context = Context::new(vec![("a", Val::Str(&text))]);
        for source in [
            "{{ a | escape_xml }}",
            "{% set e = a | escape_xml %}{{ e }}",
        ] {
            let plan = Plan::compile(source, &syntax, &Declared::default()).expect(source);
            let mut answered_from = None;
            for fuel in (0..200).map(|step| step * 16) {
                match plan.render(&context, fuel) {
                    Some(written) => {
                        assert_eq!(written.text, expected, "{source} at {fuel}");
                        answered_from.get_or_insert(fuel);
                    }
                    None => assert!(answered_from.is_none(), "{source} stops at {fuel}"),
                }
            }
            assert!(
                answered_from.is_some_and(|f| f > 0),
                "{source}: {answered_from:?}"
            );
        }
    }
}
