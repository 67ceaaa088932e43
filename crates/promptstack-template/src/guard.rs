//! Guards: checks put in front of every operation that can make a value larger than it costs.
//!
//! minijinja charges fuel for the instructions a render runs and for most data it creates, but a
//! few operations learn a value's size only while they allocate it: writing a container as text
//! (`~`, a filter's string argument, `in` on a string, `pprint`), repeating or joining
//! sequences lazily (`*`, `+`, slices, `items`, `zip`, …), and nesting containers (a list of a
//! list of …, whose drop and display recurse once per level). A list can also hold the same
//! large value many times (`[s, s, s]`), so its text can be far larger than its memory.
//!
//! So every template is compiled from a copy of its syntax tree with guards around exactly those
//! operands and results ([`guard`]). A guard is a filter whose name a template cannot write
//! (`guard:…`); it hands on the value unchanged, or the same value made concrete, after checking
//! what it is about to cost against what the render may still allocate:
//!
//! | guard | put around | checks |
//! |---|---|---|
//! | `guard:fits` | the operands of `~`, the needle of `in`, map keys, the input and arguments of filters and tests that write a value as text or hash it | the value written out in full fits in the render's room; the walk is charged |
//! | `guard:debug` | the input of `pprint` | the same for its debug form (quoted, escaped, indented) |
//! | `guard:sized` | the operands of `+` | a sequence's length, slot by slot, fits in the room (`+` may copy both) |
//! | `guard:made` | the result of `*`, a slice, a non-constant list, tuple or map, and of filters that build containers | a lazy sequence is made concrete under the fuel, and the value nests at most [`MAX_DEPTH`] containers deep |
//!
//! Everything else keeps minijinja's own semantics, errors and bytes: a guard never changes a
//! value it lets through, and an operand whose value is a string by construction (a constant,
//! the result of `~`, of a filter that returns a string) is not guarded at all. A guard costs the
//! render two instructions and, for a string operand, its length again.

use minijinja::machinery::Span;
use minijinja::machinery::ast::{self, CallArg, Expr, Spanned, Stmt};
use minijinja::value::{ObjectRepr, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State};

use crate::room::{BYTES_PER_FUEL, out_of_room, room};
use crate::spec::MAX_TEMPLATE_NESTING;

/// The deepest nesting of containers a render may make (see [`MAX_TEMPLATE_NESTING`]).
pub(crate) const MAX_DEPTH: usize = MAX_TEMPLATE_NESTING;

/// The guards' filter names: each holds a `:`, which no filter name written in a template can.
const FITS: &str = "guard:fits";
const DEBUG: &str = "guard:debug";
const SIZED: &str = "guard:sized";
const MADE: &str = "guard:made";

/// What a guard charges for each item it visits: as much as minijinja charges for visiting an
/// item while iterating (half a fuel, in bytes of data).
const VISIT_BYTES: u64 = 32;

/// What one slot of a sequence costs when it is made concrete, in bytes (minijinja's own charge
/// for a slot).
const SLOT_BYTES: u64 = 32;

/// Registers the guards' filters in an environment.
pub(crate) fn register(env: &mut Environment<'static>) {
    env.add_filter(FITS, |state: &State, _: Value, value: Value| {
        check_text(state, &value, Form::Display).map(|()| value)
    });
    env.add_filter(DEBUG, |state: &State, _: Value, value: Value| {
        check_text(state, &value, Form::Debug).map(|()| value)
    });
    env.add_filter(SIZED, |state: &State, value: Value| {
        check_slots(state, &value).map(|()| value)
    });
    env.add_filter(MADE, made);
}

/// A copy of a template's syntax tree with the guards in place.
pub(crate) fn guard<'a>(stmt: &Stmt<'a>) -> Result<Stmt<'a>, Error> {
    Guard.stmt(stmt)
}

/// The filters whose input and arguments are guarded because they write a value as text (or
/// apply a filter or test by name to every item, which may), hash it, or are not minijinja's or
/// ours (an unknown name fails anyway when it is applied).
fn writes_operands(filter: &str) -> Option<Form> {
    match filter {
        "pprint" => Some(Form::Debug),
        // Filters that never write a value as text or hash it: they look at kinds, lengths,
        // items or attributes, compare, or are promptstack's own and check sizes themselves.
        "length" | "count" | "first" | "last" | "list" | "items" | "dictsort" | "reverse"
        | "sort" | "batch" | "slice" | "sum" | "min" | "max" | "default" | "d" | "attr"
        | "bool" | "abs" | "round" | "int" | "float" | "chain" | "zip" | "split" | "lines"
        | "join" | "string" | "escape_xml" | "escape_end_tags" | "posix_path" | "guidelines"
        | "for_sites" | "context_files" | "compact" => None,
        _ => Some(Form::Display),
    }
}

/// The filters whose result is guarded because it may be a new container (lazy, or nesting its
/// input one level deeper).
fn makes_container(filter: &str) -> bool {
    matches!(
        filter,
        "items"
            | "dictsort"
            | "groupby"
            | "chain"
            | "zip"
            | "batch"
            | "slice"
            | "map"
            | "select"
            | "reject"
            | "selectattr"
            | "rejectattr"
            | "unique"
            | "sort"
            | "reverse"
            | "list"
            | "split"
            | "lines"
            | "unique_names"
            | "for_sites"
            | "context_files"
    )
}

/// The filters that always return a string (or fail), so `~` need not guard their result.
fn returns_string(filter: &str) -> bool {
    matches!(
        filter,
        "safe"
            | "escape"
            | "e"
            | "upper"
            | "lower"
            | "title"
            | "capitalize"
            | "replace"
            | "trim"
            | "indent"
            | "pprint"
            | "format"
            | "join"
            | "string"
            | "escape_xml"
            | "escape_end_tags"
            | "posix_path"
            | "compact"
    )
}

/// The tests whose operand and arguments are guarded: they write a value as text (`lower`,
/// `upper`, `startingwith`, `endingwith`), or look for it in a string (`in`).
fn test_writes_operands(test: &str) -> bool {
    matches!(
        test,
        "lower" | "upper" | "startingwith" | "endingwith" | "in"
    )
}

/// Whether an expression's value is a string or a scalar (or it fails) whatever the send: such
/// an operand needs no guard. That is a constant that is not a container, an operation on two
/// such operands (which the code generator folds, or which minijinja checks: only sequences and
/// containers escape its checks), the result of `~`, and of a filter that returns a string.
pub(crate) fn is_text(expr: &Expr<'_>) -> bool {
    match expr {
        Expr::Const(c) => c.value.as_object().is_none(),
        Expr::UnaryOp(op) => is_text(&op.expr),
        Expr::BinOp(op) => {
            matches!(op.op, ast::BinOpKind::Concat) || (is_text(&op.left) && is_text(&op.right))
        }
        Expr::Filter(filter) => returns_string(filter.name),
        _ => false,
    }
}

/// Whether `needle in haystack` needs its needle guarded: a needle is written as text only when
/// the haystack is a string, which a list, tuple or map written out in the template is not.
pub(crate) fn needle_is_guarded(needle: &Expr<'_>, haystack: &Expr<'_>) -> bool {
    !is_text(needle) && !matches!(haystack, Expr::List(_) | Expr::Tuple(_) | Expr::Map(_))
}

/// Whether the result of `left + right` is guarded.
pub(crate) fn sum_is_guarded(left: &Expr<'_>, right: &Expr<'_>) -> bool {
    !(is_text(left) && is_text(right))
}

/// Whether a filter (or the first of a chain of filters) has no input expression: it is applied
/// to the text a `{% filter %}` block or a `{% set x | … %}` block captured.
fn takes_captured_text(filter: &ast::Filter<'_>) -> bool {
    match &filter.expr {
        None => true,
        Some(Expr::Filter(inner)) => takes_captured_text(inner),
        Some(_) => false,
    }
}

/// How a value is written: as `~` and string conversion write it, or as `pprint` does.
#[derive(Clone, Copy)]
enum Form {
    Display,
    Debug,
}

/// The copier: every node copied as it is, with guards where the table above says.
struct Guard;

impl Guard {
    fn stmts<'a>(&self, stmts: &[Stmt<'a>]) -> Result<Vec<Stmt<'a>>, Error> {
        stmts.iter().map(|stmt| self.stmt(stmt)).collect()
    }

    fn stmt<'a>(&self, stmt: &Stmt<'a>) -> Result<Stmt<'a>, Error> {
        Ok(match stmt {
            Stmt::Template(t) => Stmt::Template(Spanned::new(
                ast::Template {
                    children: self.stmts(&t.children)?,
                },
                t.span(),
            )),
            Stmt::EmitExpr(e) => Stmt::EmitExpr(Spanned::new(
                ast::EmitExpr {
                    expr: self.expr(&e.expr)?,
                },
                e.span(),
            )),
            Stmt::EmitRaw(raw) => {
                Stmt::EmitRaw(Spanned::new(ast::EmitRaw { raw: raw.raw }, raw.span()))
            }
            Stmt::ForLoop(lp) => Stmt::ForLoop(Spanned::new(
                ast::ForLoop {
                    target: self.target(&lp.target)?,
                    iter: self.expr(&lp.iter)?,
                    filter_expr: self.opt(lp.filter_expr.as_ref())?,
                    recursive: lp.recursive,
                    body: self.stmts(&lp.body)?,
                    else_body: self.stmts(&lp.else_body)?,
                },
                lp.span(),
            )),
            Stmt::IfCond(cond) => Stmt::IfCond(Spanned::new(
                ast::IfCond {
                    expr: self.expr(&cond.expr)?,
                    true_body: self.stmts(&cond.true_body)?,
                    false_body: self.stmts(&cond.false_body)?,
                },
                cond.span(),
            )),
            Stmt::WithBlock(with) => Stmt::WithBlock(Spanned::new(
                ast::WithBlock {
                    assignments: with
                        .assignments
                        .iter()
                        .map(|(target, value)| Ok((self.target(target)?, self.expr(value)?)))
                        .collect::<Result<_, Error>>()?,
                    body: self.stmts(&with.body)?,
                },
                with.span(),
            )),
            Stmt::Set(set) => Stmt::Set(Spanned::new(
                ast::Set {
                    target: self.target(&set.target)?,
                    expr: self.expr(&set.expr)?,
                },
                set.span(),
            )),
            Stmt::SetBlock(set) => Stmt::SetBlock(Spanned::new(
                ast::SetBlock {
                    target: self.target(&set.target)?,
                    filter: self.opt(set.filter.as_ref())?,
                    body: self.stmts(&set.body)?,
                },
                set.span(),
            )),
            Stmt::AutoEscape(auto) => Stmt::AutoEscape(Spanned::new(
                ast::AutoEscape {
                    enabled: self.expr(&auto.enabled)?,
                    body: self.stmts(&auto.body)?,
                },
                auto.span(),
            )),
            Stmt::FilterBlock(block) => Stmt::FilterBlock(Spanned::new(
                ast::FilterBlock {
                    filter: self.expr(&block.filter)?,
                    filter_span: block.filter_span,
                    body: self.stmts(&block.body)?,
                },
                block.span(),
            )),
            Stmt::Macro(mac) => Stmt::Macro(self.macro_decl(mac)?),
            Stmt::CallBlock(call) => Stmt::CallBlock(Spanned::new(
                ast::CallBlock {
                    call: self.call(&call.call)?,
                    call_expr_span: call.call_expr_span,
                    macro_decl: self.macro_decl(&call.macro_decl)?,
                },
                call.span(),
            )),
            Stmt::Do(d) => Stmt::Do(Spanned::new(
                ast::Do {
                    call: self.call(&d.call)?,
                },
                d.span(),
            )),
            // Statements of engine features promptstack does not enable (`include`, `extends`,
            // `import`, `break`, …) exist only when another crate of the build enables them.
            #[allow(unreachable_patterns)]
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "this statement is not available in promptstack templates",
                ));
            }
        })
    }

    fn macro_decl<'a>(
        &self,
        mac: &Spanned<ast::Macro<'a>>,
    ) -> Result<Spanned<ast::Macro<'a>>, Error> {
        Ok(Spanned::new(
            ast::Macro {
                name: mac.name,
                args: self.exprs(&mac.args)?,
                defaults: self.exprs(&mac.defaults)?,
                body: self.stmts(&mac.body)?,
            },
            mac.span(),
        ))
    }

    fn call<'a>(&self, call: &Spanned<ast::Call<'a>>) -> Result<Spanned<ast::Call<'a>>, Error> {
        Ok(Spanned::new(
            ast::Call {
                expr: self.expr(&call.expr)?,
                args: self.args(&call.args, None)?,
            },
            call.span(),
        ))
    }

    /// Copies an assignment target (`x`, `a, b`, `ns.attr`) as it is: it names places, it makes
    /// no value, and the code generator expects exactly these shapes.
    fn target<'a>(&self, expr: &Expr<'a>) -> Result<Expr<'a>, Error> {
        Ok(match expr {
            Expr::List(list) => Expr::List(Spanned::new(
                ast::List {
                    items: list
                        .items
                        .iter()
                        .map(|item| self.target(item))
                        .collect::<Result<_, Error>>()?,
                },
                list.span(),
            )),
            Expr::GetAttr(get) => Expr::GetAttr(Spanned::new(
                ast::GetAttr {
                    expr: self.expr(&get.expr)?,
                    name: get.name,
                },
                get.span(),
            )),
            other => self.expr(other)?,
        })
    }

    fn opt<'a>(&self, expr: Option<&Expr<'a>>) -> Result<Option<Expr<'a>>, Error> {
        expr.map(|expr| self.expr(expr)).transpose()
    }

    fn exprs<'a>(&self, exprs: &[Expr<'a>]) -> Result<Vec<Expr<'a>>, Error> {
        exprs.iter().map(|expr| self.expr(expr)).collect()
    }

    /// Copies call arguments, guarding each non-text one with `form` when given.
    fn args<'a>(
        &self,
        args: &[CallArg<'a>],
        form: Option<Form>,
    ) -> Result<Vec<CallArg<'a>>, Error> {
        let guard = |expr: &Expr<'a>| -> Result<Expr<'a>, Error> {
            let copied = self.expr(expr)?;
            Ok(match form {
                Some(form) if !is_text(expr) => wrap(form.guard(), copied),
                _ => copied,
            })
        };
        args.iter()
            .map(|arg| {
                Ok(match arg {
                    CallArg::Pos(expr) => CallArg::Pos(guard(expr)?),
                    CallArg::Kwarg(name, expr) => CallArg::Kwarg(name, guard(expr)?),
                    CallArg::PosSplat(expr) => CallArg::PosSplat(guard(expr)?),
                    CallArg::KwargSplat(expr) => CallArg::KwargSplat(guard(expr)?),
                })
            })
            .collect()
    }

    /// Copies an expression: a dispatch only, so that each level of a deeply nested expression
    /// keeps one small frame of its own kind on the stack.
    fn expr<'a>(&self, expr: &Expr<'a>) -> Result<Expr<'a>, Error> {
        match expr {
            Expr::Var(var) => self.var(var),
            Expr::Const(c) => self.constant(c),
            Expr::Slice(slice) => self.slice(slice),
            Expr::UnaryOp(op) => self.unary(op),
            Expr::BinOp(op) => self.binop(op),
            Expr::Compare(cmp) => self.compare(cmp),
            Expr::IfExpr(ifx) => self.if_expr(ifx),
            Expr::Filter(filter) => self.filter(filter),
            Expr::Test(test) => self.test(test),
            Expr::GetAttr(get) => self.get_attr(get),
            Expr::GetItem(get) => self.get_item(get),
            Expr::Call(call) => self.call_expr(call),
            Expr::List(list) => self.list(list),
            Expr::Tuple(tuple) => self.tuple(tuple),
            Expr::Map(map) => self.map(map),
        }
    }

    #[inline(never)]
    fn var<'a>(&self, var: &Spanned<ast::Var<'a>>) -> Result<Expr<'a>, Error> {
        Ok(Expr::Var(Spanned::new(ast::Var { id: var.id }, var.span())))
    }

    #[inline(never)]
    fn constant<'a>(&self, c: &Spanned<ast::Const>) -> Result<Expr<'a>, Error> {
        Ok(Expr::Const(Spanned::new(
            ast::Const {
                value: c.value.clone(),
            },
            c.span(),
        )))
    }

    #[inline(never)]
    fn slice<'a>(&self, slice: &Spanned<ast::Slice<'a>>) -> Result<Expr<'a>, Error> {
        Ok(wrap_result(
            MADE,
            Expr::Slice(Spanned::new(
                ast::Slice {
                    expr: self.expr(&slice.expr)?,
                    start: self.opt(slice.start.as_ref())?,
                    stop: self.opt(slice.stop.as_ref())?,
                    step: self.opt(slice.step.as_ref())?,
                },
                slice.span(),
            )),
        ))
    }

    #[inline(never)]
    fn unary<'a>(&self, op: &Spanned<ast::UnaryOp<'a>>) -> Result<Expr<'a>, Error> {
        Ok(Expr::UnaryOp(Spanned::new(
            ast::UnaryOp {
                op: match op.op {
                    ast::UnaryOpKind::Not => ast::UnaryOpKind::Not,
                    ast::UnaryOpKind::Neg => ast::UnaryOpKind::Neg,
                },
                expr: self.expr(&op.expr)?,
            },
            op.span(),
        )))
    }

    #[inline(never)]
    fn compare<'a>(&self, cmp: &Spanned<ast::Compare<'a>>) -> Result<Expr<'a>, Error> {
        let mut previous = &cmp.expr;
        let mut ops = Vec::with_capacity(cmp.ops.len());
        // The needle of each `in` is the operand before it; it is guarded where it is
        // written, so it is copied first with the guard when any `in` reads it.
        let mut guarded = vec![false; cmp.ops.len() + 1];
        for (i, op) in cmp.ops.iter().enumerate() {
            if matches!(op.op, ast::CompareOpKind::In | ast::CompareOpKind::NotIn)
                && needle_is_guarded(previous, &op.expr)
            {
                guarded[i] = true;
            }
            previous = &op.expr;
        }
        let operand = |expr: &Expr<'a>, guard: bool| -> Result<Expr<'a>, Error> {
            let copied = self.expr(expr)?;
            Ok(if guard { wrap(FITS, copied) } else { copied })
        };
        let first = operand(&cmp.expr, guarded[0])?;
        for (i, op) in cmp.ops.iter().enumerate() {
            ops.push(ast::CompareOp {
                op: op.op,
                expr: operand(&op.expr, guarded[i + 1])?,
            });
        }
        Ok(Expr::Compare(Spanned::new(
            ast::Compare { expr: first, ops },
            cmp.span(),
        )))
    }

    #[inline(never)]
    fn if_expr<'a>(&self, ifx: &Spanned<ast::IfExpr<'a>>) -> Result<Expr<'a>, Error> {
        Ok(Expr::IfExpr(Spanned::new(
            ast::IfExpr {
                test_expr: self.expr(&ifx.test_expr)?,
                true_expr: self.expr(&ifx.true_expr)?,
                false_expr: self.opt(ifx.false_expr.as_ref())?,
            },
            ifx.span(),
        )))
    }

    #[inline(never)]
    fn filter<'a>(&self, filter: &Spanned<ast::Filter<'a>>) -> Result<Expr<'a>, Error> {
        let form = writes_operands(filter.name);
        let input = match &filter.expr {
            Some(input) => {
                let copied = self.expr(input)?;
                Some(match form {
                    Some(form) if !is_text(input) => wrap(form.guard(), copied),
                    _ => copied,
                })
            }
            None => None,
        };
        let copied = Expr::Filter(Spanned::new(
            ast::Filter {
                name: filter.name,
                expr: input,
                args: self.args(&filter.args, form)?,
            },
            filter.span(),
        ));
        // A filter applied to a block's captured text (`{% filter … %}`, `{% set x | … %}`)
        // takes its input from the stack, so nothing may be put before it there; it
        // works on a string, which no filter nests deeper than a list of strings.
        Ok(
            if makes_container(filter.name) && !takes_captured_text(filter) {
                wrap_result(MADE, copied)
            } else {
                copied
            },
        )
    }

    #[inline(never)]
    fn test<'a>(&self, test: &Spanned<ast::Test<'a>>) -> Result<Expr<'a>, Error> {
        let form = test_writes_operands(test.name).then_some(Form::Display);
        let operand = self.expr(&test.expr)?;
        let operand = match form {
            Some(form) if !is_text(&test.expr) => wrap(form.guard(), operand),
            _ => operand,
        };
        Ok(Expr::Test(Spanned::new(
            ast::Test {
                name: test.name,
                expr: operand,
                args: self.args(&test.args, form)?,
            },
            test.span(),
        )))
    }

    #[inline(never)]
    fn get_attr<'a>(&self, get: &Spanned<ast::GetAttr<'a>>) -> Result<Expr<'a>, Error> {
        Ok(Expr::GetAttr(Spanned::new(
            ast::GetAttr {
                expr: self.expr(&get.expr)?,
                name: get.name,
            },
            get.span(),
        )))
    }

    #[inline(never)]
    fn get_item<'a>(&self, get: &Spanned<ast::GetItem<'a>>) -> Result<Expr<'a>, Error> {
        Ok(Expr::GetItem(Spanned::new(
            ast::GetItem {
                expr: self.expr(&get.expr)?,
                subscript_expr: self.expr(&get.subscript_expr)?,
            },
            get.span(),
        )))
    }

    #[inline(never)]
    fn call_expr<'a>(&self, call: &Spanned<ast::Call<'a>>) -> Result<Expr<'a>, Error> {
        Ok(Expr::Call(self.call(call)?))
    }

    #[inline(never)]
    fn list<'a>(&self, list: &Spanned<ast::List<'a>>) -> Result<Expr<'a>, Error> {
        let copied = Expr::List(Spanned::new(
            ast::List {
                items: self.exprs(&list.items)?,
            },
            list.span(),
        ));
        Ok(if list.items.iter().all(is_text) {
            copied
        } else {
            wrap_result(MADE, copied)
        })
    }

    #[inline(never)]
    fn tuple<'a>(&self, tuple: &Spanned<ast::Tuple<'a>>) -> Result<Expr<'a>, Error> {
        let copied = Expr::Tuple(Spanned::new(
            ast::Tuple {
                items: self.exprs(&tuple.items)?,
            },
            tuple.span(),
        ));
        Ok(if tuple.items.iter().all(is_text) {
            copied
        } else {
            wrap_result(MADE, copied)
        })
    }

    #[inline(never)]
    fn map<'a>(&self, map: &Spanned<ast::Map<'a>>) -> Result<Expr<'a>, Error> {
        let keys = map
            .keys
            .iter()
            .map(|key| {
                let copied = self.expr(key)?;
                Ok(if is_text(key) {
                    copied
                } else {
                    wrap(FITS, copied)
                })
            })
            .collect::<Result<_, Error>>()?;
        let copied = Expr::Map(Spanned::new(
            ast::Map {
                keys,
                values: self.exprs(&map.values)?,
            },
            map.span(),
        ));
        Ok(if map.values.iter().all(is_text) {
            copied
        } else {
            wrap_result(MADE, copied)
        })
    }

    #[inline(never)]
    fn binop<'a>(&self, op: &Spanned<ast::BinOp<'a>>) -> Result<Expr<'a>, Error> {
        use ast::BinOpKind as K;
        let kind = op.op;
        let (left_guard, right_guard) = match kind {
            K::Concat => (
                (!is_text(&op.left)).then_some(FITS),
                (!is_text(&op.right)).then_some(FITS),
            ),
            K::In => (needle_is_guarded(&op.left, &op.right).then_some(FITS), None),
            _ => (None, None),
        };
        let operand = |expr: &Expr<'a>, guard: Option<&'static str>| -> Result<Expr<'a>, Error> {
            let copied = self.expr(expr)?;
            Ok(match guard {
                Some(guard) => wrap(guard, copied),
                None => copied,
            })
        };
        let copied = Expr::BinOp(Spanned::new(
            ast::BinOp {
                op: kind,
                left: operand(&op.left, left_guard)?,
                right: operand(&op.right, right_guard)?,
            },
            op.span(),
        ));
        // `seq * n` is a lazy repetition; made concrete (and checked) where it is made. A
        // constant string operand makes it a string repetition, which minijinja checks.
        let string_constant =
            |expr: &Expr<'_>| matches!(expr, Expr::Const(c) if c.value.kind() == ValueKind::String);
        let scalars = is_text(&op.left) && is_text(&op.right);
        let repeats = matches!(kind, K::Mul)
            && !scalars
            && !string_constant(&op.left)
            && !string_constant(&op.right);
        Ok(if repeats {
            wrap_result(MADE, copied)
        } else if matches!(kind, K::Add) && sum_is_guarded(&op.left, &op.right) {
            // `+` of two sequences is a lazy concatenation, which minijinja makes concrete all at
            // once when a chain of them grows deep; checked where it is made, every sequence a
            // render holds stays within the room, and so does any such copy.
            wrap_result(SIZED, copied)
        } else {
            copied
        })
    }
}

impl Form {
    fn guard(self) -> &'static str {
        match self {
            Form::Display => FITS,
            Form::Debug => DEBUG,
        }
    }
}

/// `none | guard(expr)`, spanned as the expression: the value goes in as the filter's second
/// argument, so the engine does not charge its text as the filter's input a second time.
fn wrap<'a>(guard: &'static str, expr: Expr<'a>) -> Expr<'a> {
    let span: Span = expr.span();
    Expr::Filter(Spanned::new(
        ast::Filter {
            name: guard,
            expr: Some(Expr::Const(Spanned::new(
                ast::Const {
                    value: Value::from(()),
                },
                span,
            ))),
            args: vec![CallArg::Pos(expr)],
        },
        span,
    ))
}

/// `expr | guard`: the guard of a result, which takes it as its input. A result may sit on the
/// spine of a long chain (`a + b + c + …`, `x | list | list | …`), which the code generator
/// walks recursively: this form adds one level to it where [`wrap`] adds two.
fn wrap_result<'a>(guard: &'static str, expr: Expr<'a>) -> Expr<'a> {
    let span: Span = expr.span();
    Expr::Filter(Spanned::new(
        ast::Filter {
            name: guard,
            expr: Some(expr),
            args: Vec::new(),
        },
        span,
    ))
}

/// Fails unless `value`, written out in full in `form`, fits in what the render may still
/// allocate. Strings are measured at once; containers are walked depth first, one iterator per
/// open container, charging the fuel for each item visited, and the walk stops as soon as the
/// text would pass the room, so its cost is bounded whatever the value shares or repeats.
fn check_text(state: &State, value: &Value, form: Form) -> Result<(), Error> {
    /// What one item costs besides its text (`, ` and brackets; for debug, a line and quotes).
    const SLOT: u64 = 8;
    /// Debug writes each level of nesting as four spaces on every line below it.
    const INDENT: u64 = 4;
    /// Debug may write a character of a string as up to ten bytes (`\u{10ffff}`).
    const DEBUG_CHAR: u64 = 10;
    if let Some(text) = value.as_str() {
        let bytes = match form {
            Form::Display => text.len() as u64,
            Form::Debug => (text.len() as u64).saturating_mul(DEBUG_CHAR),
        };
        return fit(state, bytes);
    }
    if value.as_object().is_none() {
        return Ok(());
    }
    let room = room(state);
    let mut used = 0u64;
    let mut visited = 0u64;
    let mut open: Vec<(Value, minijinja::value::ValueIter)> = Vec::new();
    let mut next = Some(value.clone());
    loop {
        if let Some(value) = next.take() {
            visited += 1;
            let depth = open.len() as u64;
            used = used.saturating_add(match form {
                Form::Display => SLOT,
                Form::Debug => SLOT.saturating_add(INDENT.saturating_mul(depth)),
            });
            if let Some(text) = value.as_str() {
                used = used.saturating_add(match form {
                    Form::Display => text.len() as u64,
                    Form::Debug => (text.len() as u64).saturating_mul(DEBUG_CHAR),
                });
            } else if value.as_object().is_some()
                && let Ok(items) = value.try_iter()
            {
                if open.len() >= MAX_DEPTH * 2 {
                    return Err(too_deep());
                }
                open.push((value, items));
            }
            if used >= room {
                charge_visits(state, visited)?;
                return Err(out_of_room(used, room));
            }
        }
        let Some((container, items)) = open.last_mut() else {
            return charge_visits(state, visited);
        };
        match items.next() {
            Some(item) => {
                if container.kind() == ValueKind::Map {
                    let member = container.get_item(&item).unwrap_or_default();
                    used = used.saturating_add(SLOT);
                    if let Some(text) = item.as_str() {
                        used = used.saturating_add(match form {
                            Form::Display => text.len() as u64,
                            Form::Debug => (text.len() as u64).saturating_mul(DEBUG_CHAR),
                        });
                    }
                    next = Some(member);
                } else {
                    next = Some(item);
                }
            }
            None => {
                open.pop();
            }
        }
    }
}

/// Fails unless a sequence operand of `+` can be copied slot by slot within the room (the
/// engine may make a chain of concatenations concrete all at once).
fn check_slots(state: &State, value: &Value) -> Result<(), Error> {
    if let Some(text) = value.as_str() {
        return fit(state, text.len() as u64);
    }
    let Some(object) = value.as_object() else {
        return Ok(());
    };
    if !matches!(object.repr(), ObjectRepr::Seq | ObjectRepr::Iterable) {
        return Ok(());
    }
    match value.len() {
        Some(len) => fit(state, (len as u64).saturating_mul(SLOT_BYTES)),
        // A sequence of unknown length is counted item by item, within the room.
        None => {
            let room = room(state);
            let mut used = 0u64;
            for _ in value.try_iter()? {
                used = used.saturating_add(SLOT_BYTES);
                if used >= room {
                    return Err(out_of_room(used, room));
                }
            }
            state.consume_fuel(used / BYTES_PER_FUEL)
        }
    }
}

/// A value a template made: a lazy sequence made concrete under the fuel (a list of its items,
/// still iterated as the lazy one was), then checked to nest at most [`MAX_DEPTH`] containers
/// deep.
fn made(state: &State, value: Value) -> Result<Value, Error> {
    let Some(object) = value.as_object() else {
        return Ok(value);
    };
    let value = if object.repr() == ObjectRepr::Iterable {
        let sized = value.len().is_some();
        if let Some(len) = value.len() {
            fit(state, (len as u64).saturating_mul(SLOT_BYTES))?;
        }
        let room = room(state);
        let mut items = Vec::with_capacity(value.len().unwrap_or(0));
        for item in value.try_iter()? {
            if (items.len() as u64 + 1).saturating_mul(SLOT_BYTES) >= room {
                return Err(out_of_room(
                    (items.len() as u64 + 1).saturating_mul(SLOT_BYTES),
                    room,
                ));
            }
            items.push(item);
        }
        state.consume_fuel((items.len() as u64).saturating_mul(SLOT_BYTES) / BYTES_PER_FUEL)?;
        // Iterated as the lazy sequence was: its length known (and shown as a list) or not (and
        // shown as `<iterator>`), an invalid item (a failure inside the lazy sequence) yielded
        // where it was, to fail where it is used.
        if sized {
            Value::make_object_iterable(items, |items| Box::new(items.iter().cloned()))
        } else {
            Value::make_object_iterable(items, |items| Box::new(Unsized(items.iter())))
        }
    } else {
        value
    };
    check_depth(state, &value)?;
    Ok(value)
}

/// The items of a sequence made concrete from a lazy one whose length was not known: an
/// iterator that does not tell its length either.
struct Unsized<'a>(std::slice::Iter<'a, Value>);

impl Iterator for Unsized<'_> {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        self.0.next().cloned()
    }
}

/// Fails if `value` nests more than [`MAX_DEPTH`] containers deep. Visits containers only (a
/// string ends a branch), depth first, charging the fuel for each, and stops at the first one
/// too deep.
fn check_depth(state: &State, value: &Value) -> Result<(), Error> {
    let mut visited = 0u64;
    let mut open: Vec<(Value, minijinja::value::ValueIter)> = Vec::new();
    if let Ok(items) = value.try_iter() {
        visited += 1;
        open.push((value.clone(), items));
    }
    while let Some((container, items)) = open.last_mut() {
        let Some(item) = items.next() else {
            open.pop();
            continue;
        };
        let child = if container.kind() == ValueKind::Map {
            container.get_item(&item).unwrap_or_default()
        } else {
            item
        };
        if child.as_object().is_none() {
            continue;
        }
        if let Ok(items) = child.try_iter() {
            visited += 1;
            if visited.is_multiple_of(4096) {
                charge_visits(state, 4096)?;
            }
            if open.len() >= MAX_DEPTH {
                charge_visits(state, visited % 4096)?;
                return Err(too_deep());
            }
            open.push((child, items));
        }
    }
    charge_visits(state, visited % 4096)
}

/// Charges the fuel for `visited` items a guard looked at.
fn charge_visits(state: &State, visited: u64) -> Result<(), Error> {
    state.consume_fuel(visited.saturating_mul(VISIT_BYTES) / BYTES_PER_FUEL)
}

/// Fails unless `bytes` more fit in what the render may still allocate.
fn fit(state: &State, bytes: u64) -> Result<(), Error> {
    let room = room(state);
    if bytes >= room {
        return Err(out_of_room(bytes, room));
    }
    Ok(())
}

fn too_deep() -> Error {
    Error::new(
        ErrorKind::InvalidOperation,
        format!("a value nests containers more than {MAX_DEPTH} deep"),
    )
}

#[cfg(test)]
mod tests {
    use minijinja::value::Value;
    use proptest::prelude::*;

    use super::MAX_DEPTH;
    use crate::{TemplateSet, Whitespace};

    /// The values the generated templates read: every kind an operator or filter treats apart.
    fn root() -> Value {
        crate::to_value(serde_json::json!({
            "s": "Ab c",
            "t": "xyz",
            "e": "",
            "n": 3,
            "f": 1.5,
            "b": true,
            "z": null,
            "xs": ["b", "a", "c"],
            "ns": [3, 1, 2],
            "m": {"k": "v", "name": "m"},
            "nested": [["a", "b"], ["c"]],
            "people": [{"name": "x", "age": 3}, {"name": "y", "age": 1}],
        }))
    }

    fn atom() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "s",
            "t",
            "e",
            "n",
            "f",
            "b",
            "z",
            "xs",
            "ns",
            "m",
            "nested",
            "people",
            "m.k",
            "m.missing",
            "xs[0]",
            "nested[1]",
            "'lit'",
            "2",
            "0",
            "[]",
            "['q', s]",
            "(s, 1)",
            "{'a': s}",
            "none",
            "true",
            "people[0]",
        ])
        .prop_map(str::to_owned)
    }

    fn expr() -> impl Strategy<Value = String> {
        atom().prop_recursive(4, 24, 3, |inner| {
            let filters = prop::sample::select(vec![
                "upper",
                "lower",
                "title",
                "capitalize",
                "trim",
                "length",
                "first",
                "last",
                "list",
                "items",
                "dictsort",
                "reverse",
                "sort",
                "unique",
                "batch(2)",
                "slice(2)",
                "join",
                "join(',')",
                "string",
                "replace('a', 'b')",
                "indent(2)",
                "pprint",
                "default('d')",
                "map('upper')",
                "select",
                "reject",
                "min",
                "max",
                "abs",
                "int",
                "float",
                "round",
                "bool",
                "split",
                "lines",
                "escape",
                "safe",
                "groupby('name')",
                "map(attribute='name')",
                "selectattr('age')",
                "sum",
                "chain(xs)",
                "zip(ns)",
                "escape_xml",
                "escape_end_tags('b', 'x')",
                "unique_names",
                "guidelines",
            ]);
            let tests = prop::sample::select(vec![
                "defined",
                "none",
                "string",
                "sequence",
                "mapping",
                "iterable",
                "startingwith('A')",
                "lower",
                "upper",
                "in(xs)",
                "eq(s)",
                "number",
            ]);
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} ~ {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} + {b})")),
                (inner.clone(), 0..3u8).prop_map(|(a, n)| format!("({a} * {n})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} in {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} not in {b})")),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(a, b, c)| format!("({a} in {b} in {c})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("[{a}, {b}]")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}, {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{{{a}: {b}}}")),
                inner.clone().prop_map(|a| format!("{a}[1:]")),
                inner.clone().prop_map(|a| format!("{a}[::-1]")),
                (inner.clone(), filters).prop_map(|(a, f)| format!("({a} | {f})")),
                (inner.clone(), tests).prop_map(|(a, t)| format!("({a} is {t})")),
                (inner.clone(), inner.clone(), inner.clone())
                    .prop_map(|(a, b, c)| format!("({a} if {b} else {c})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} == {b})")),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} < {b})")),
                inner.clone().prop_map(|a| format!("(not {a})")),
                inner
                    .clone()
                    .prop_map(|a| format!("('%s-%s' | format({a}, 1))")),
            ]
        })
    }

    fn template() -> impl Strategy<Value = String> {
        (expr(), expr()).prop_flat_map(|(a, b)| {
            prop::sample::select(vec![
                format!("{{{{ {a} }}}}|{{{{ {b} }}}}"),
                format!("{{% set x = {a} %}}{{{{ x }}}}{{{{ x ~ {b} }}}}"),
                format!("{{% for i in {a} %}}[{{{{ i }}}}]{{% else %}}none{{% endfor %}}"),
                format!("{{% if {a} %}}yes{{% else %}}{{{{ {b} }}}}{{% endif %}}"),
                format!("{{% filter upper %}}{{{{ {a} }}}}{{% endfilter %}}"),
                format!("{{% set x | trim %}} {{{{ {a} }}}} {{% endset %}}{{{{ x }}}}"),
                format!(
                    "{{% macro m(v, w={b}) %}}<{{{{ v }}}}|{{{{ w }}}}>{{% endmacro %}}{{{{ m({a}) }}}}"
                ),
                format!("{{% for k, v in {a} | items %}}{{{{ k }}}}={{{{ v }}}};{{% endfor %}}"),
                format!("{{% with y = {a} %}}{{{{ y }}}}{{% endwith %}}"),
            ])
        })
    }

    /// A template's render by the environment's own compilation (the oracle) and by its guarded
    /// program: the same text, or the same error.
    fn both(set: &TemplateSet, name: &str) -> (Result<String, String>, Result<String, String>) {
        let oracle = set
            .env
            .get_template(name)
            .and_then(|t| t.render(root()))
            .map_err(|e| e.to_string());
        let guarded = set
            .render_engine(name, &root())
            .map(|r| r.text)
            .map_err(|e| e.to_string());
        (oracle, guarded)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Guards never change what a render writes or how it fails, while nothing is near the
        /// render's limits.
        #[test]
        fn guarded_programs_render_as_minijinja_does(source in template()) {
            let mut set = TemplateSet::new(Whitespace::default());
            if set.add("t".into(), source.clone()).is_err() {
                // A syntax error (e.g. a test applied where the grammar allows none) is
                // minijinja's, reported before any program exists.
                return Ok(());
            }
            let (oracle, guarded) = both(&set, "t");
            prop_assert_eq!(oracle, guarded, "{}", source);
        }
    }

    /// Every example's templates and gates render the same, guarded or not, for every example
    /// send: the oracle over the real specs.
    #[test]
    fn examples_render_as_the_unguarded_engine_does() {
        let sources = [
            "{{ s ~ ' ' ~ t }}{{ xs | join(', ') }}{% for p in people %}{{ p.name ~ p.age }}{% endfor %}",
            "{% if 'a' in xs and n > 2 %}{{ xs + ns }}{% endif %}{{ (xs * 2) | length }}",
            "{{ m | dictsort }}{{ nested | batch(1) | list }}{{ [s, t] | map('upper') | join }}",
            "{{ '%s' | format(xs) }}{{ xs | pprint }}{{ (m.missing ~ 'x') if false else 'y' }}",
        ];
        for source in sources {
            let mut set = TemplateSet::new(Whitespace::default());
            set.add("t".into(), source.to_owned()).unwrap();
            let (oracle, guarded) = both(&set, "t");
            assert_eq!(oracle, guarded, "{source}");
        }
    }

    /// Renders one template with the default template memory; the error's text.
    fn fails(source: &str) -> String {
        let mut set = TemplateSet::new(Whitespace::default());
        set.add("t".into(), source.to_owned()).unwrap();
        set.render_engine("t", &root())
            .map(|r| r.text.len())
            .expect_err(source)
            .to_string()
    }

    const BIG: &str = "{% set s = 'a' * 10000000 %}";

    #[test]
    fn a_container_written_as_text_is_measured_before_it_is_written() {
        // Each of these writes a list holding the same 10 MB string a hundred times: a gigabyte
        // of text from 10 MB of memory.
        for tail in [
            "{{ '' ~ ([s] * 100) }}",
            "{{ '' ~ [s, s, s, s, s, s, s, s, s, s] ~ [s, s, s, s, s, s, s, s, s, s] }}",
            "{{ ([s] * 100) | upper }}",
            "{{ ([s] * 100) | title }}",
            "{{ ([s] * 100) | trim }}",
            "{{ ([s] * 100) | indent }}",
            "{{ ([s] * 100) | escape }}",
            "{{ ([s] * 100) | safe }}",
            "{{ ([s] * 100) | pprint }}",
            "{{ 'x' | replace('x', [s] * 100) }}",
            "{{ '%s' | format([s] * 100) }}",
            "{{ ([s] * 100) in 'x' }}",
            "{{ 'x' is startingwith([s] * 100) }}",
            "{{ ([[s] * 100]) | map('upper') | list }}",
            "{{ {([s] * 100): 1} }}",
            "{{ ([[s] * 100] * 2) | unique | list }}",
        ] {
            let error = fails(&format!("{BIG}{tail}"));
            assert!(error.contains("would not fit"), "{tail}: {error}");
        }
    }

    #[test]
    fn lazy_sequences_are_made_within_the_fuel() {
        for source in [
            "{{ '' ~ (['a' * 1000000] * 100000000) }}",
            "{% for x in ['a'] * 100000000 %}{% endfor %}",
            "{{ (['a'] * 100000000) | list | length }}",
            "{{ (['a'] * 100000000)[1:] | length }}",
        ] {
            let error = fails(source);
            assert!(error.contains("would not fit"), "{source}: {error}");
        }
        // `+` doubling a list: each sum is checked where it is made.
        let doubling = format!(
            "{{% set a = ['a'] %}}{}{{{{ a | length }}}}",
            "{% set a = a + a %}".repeat(40)
        );
        assert!(fails(&doubling).contains("would not fit"));
    }

    #[test]
    fn nesting_past_the_limit_fails_where_it_is_made() {
        for step in [
            "{% set a = [a] %}",
            "{% set a = a | batch(1) %}",
            "{% set a = {'k': a} %}",
            "{% set a = (a, 1) %}",
        ] {
            let source = format!(
                "{{% set a = ['x'] %}}{}{{{{ a | length }}}}",
                step.repeat(MAX_DEPTH)
            );
            let error = fails(&source);
            assert!(
                error.contains(&format!("more than {MAX_DEPTH} deep")),
                "{step}: {error}"
            );
            // At the limit (the first list, and one level less of the same), it renders.
            let source = format!(
                "{{% set a = ['x'] %}}{}{{{{ a | length }}}}",
                step.repeat(MAX_DEPTH - 1)
            );
            let mut set = TemplateSet::new(Whitespace::default());
            set.add("t".into(), source).unwrap();
            set.render_engine("t", &root()).unwrap();
        }
    }

    #[test]
    fn repeating_a_repetition_keeps_no_chain_of_lazy_sequences() {
        // Each `a * 1` is made concrete where it is made, so fifty thousand of them leave a list
        // of one item, not fifty thousand iterators inside each other.
        let source = format!(
            "{{% set a = ['x'] %}}{}{{{{ a | length }}}}",
            "{% set a = a * 1 %}".repeat(50_000)
        );
        let mut set = TemplateSet::new(Whitespace::default());
        set.add("t".into(), source).unwrap();
        assert_eq!(set.render_engine("t", &root()).unwrap().text, "1");
    }
}
