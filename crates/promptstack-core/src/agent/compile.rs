//! Compiling a spec into an [`Agent`]: templates compiled, every rule checked, ready to assemble.
//!
//! Compilation is where the spec-level invariants are enforced, each as a located error:
//! templates and gates must parse; they may read only known variables; a stable block may not read
//! a volatile variable (it would silently break the cache); a block must declare at least the trust
//! of what it renders; stable blocks come before volatile ones; and no user-controlled text may end
//! the stable half or a target's system text. Lint findings that do not make the spec unusable
//! (a note some target forgets, a tool named in ungated text) become diagnostics.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use promptstack_template::{GATE_PREFIX, SimpleGate, TemplateSet, Whitespace};

use super::lint;
use crate::block::Origin;
use crate::caches::Caches;
use crate::diagnostic::Diagnostic;
use crate::ir::AgentInner;
use crate::ir::{
    Body, CompiledTarget, CompiledTool, Gate, HalfSizes, MAX_VARIANTS, TargetItem, Unit, Variant,
};
use crate::root::{ReadRoots, StableVariables, root_of};
use crate::spec::load::{
    Locator, SpecDiagnostic, SpecError, display_path, lowercase_first, suggest,
};
use crate::spec::span::push_pointer;
use crate::spec::{AgentSpec, BlockKind, Placement, Stability, Trust, load};

/// Per-unit facts collected while validating, used by several checks.
pub(super) struct UnitFacts {
    pub(super) pointer: String,
}

/// Compiles a parsed spec, resolving registry capabilities against `registry`: the program an
/// [`Agent`](crate::Agent) handle shares, or every semantic problem found.
pub(super) fn compile(
    parsed: load::ParsedSpec,
    registry: &crate::inject::manifests::Registry,
) -> Result<AgentInner, SpecError> {
    let load::ParsedSpec {
        mut spec,
        source,
        spans,
        mut recovered,
    } = parsed;
    let mut capabilities = Vec::new();
    if spec.stage.is_some() {
        let locator = Locator {
            source: &source,
            spans: &spans,
        };
        capabilities =
            crate::inject::compile_capabilities(&mut spec, registry, &locator, &mut recovered);
    }
    let mut compiler = Compiler {
        spec: &spec,
        locator: Locator {
            source: &source,
            spans: &spans,
        },
        templates: TemplateSet::new(Whitespace {
            trim_blocks: spec.render.trim_blocks,
            lstrip_blocks: spec.render.lstrip_blocks,
        }),
        errors: recovered,
        lint: Vec::new(),
    };
    compiler
        .templates
        .declare_variables(&spec.variables, &crate::root::CONTEXT_NAMES);
    let (mut units, mut facts) = compiler.units();
    let subagents = compiler.subagents(&mut units, &mut facts);
    let tools = compiler.tools();
    compiler.check_ids(&units, &facts);
    compiler.check_variables_and_trust(&mut units, &facts);
    compiler.check_order(&units, &facts);
    let targets = compiler.targets(&units);
    lint::static_checks(
        &spec,
        &units,
        &tools,
        &compiler.templates,
        &mut compiler.lint,
    );
    let Compiler {
        templates,
        errors,
        lint,
        ..
    } = compiler;
    if !errors.is_empty() {
        return Err(SpecError::new(errors));
    }
    let stage = spec.stage.as_ref().map(|_| crate::ir::CompiledStage {
        capabilities,
        main_volatile: units.iter().any(|u| {
            u.scope.is_none()
                && u.placement == Placement::Body
                && u.kind != BlockKind::Note
                && u.stability == Stability::Volatile
        }),
        subagents,
    });
    let mut lint = lint;
    match (&stage, &spec.auto_injections) {
        (Some(stage), Some(config)) => {
            let overrides = crate::inject::Overrides::read(Some(config));
            let locator = Locator {
                source: &source,
                spans: &spans,
            };
            for finding in crate::inject::override_findings(stage, &overrides) {
                // The finding's key path, or the nearest enclosing key the file has.
                let mut pointer = finding
                    .subject
                    .as_deref()
                    .map(|path| format!("/{}", path.replace('.', "/")))
                    .unwrap_or_default();
                let location = loop {
                    if let Some(span) = locator.spans.find(&pointer) {
                        break Some(source.location(span.value.start));
                    }
                    match pointer.rfind('/') {
                        Some(i) if i > 0 => pointer.truncate(i),
                        _ => break None,
                    }
                };
                lint.push(finding.at(location));
            }
        }
        (None, Some(_)) => {
            let location = spans
                .find("/auto_injections")
                .map(|span| source.location(span.value.start));
            lint.push(
                Diagnostic::warning(
                    "overrides-without-stage",
                    "`[auto_injections]` has no effect: the spec declares no `[stage]`",
                )
                .at(location)
                .hint("add a [stage], or remove [auto_injections]"),
            );
        }
        _ => {}
    }

    Ok(AgentInner {
        stable_variables: StableVariables::of(&spec.variables),
        spec: Arc::new(spec),
        source,
        read_roots: ReadRoots::of(&templates),
        volatile_roots: ReadRoots::of_some(
            &templates,
            units
                .iter()
                .filter(|unit| unit.stability == Stability::Volatile)
                .flat_map(Unit::templates),
        ),
        templates,
        units,
        tools,
        targets: Arc::new(targets),
        lint,
        caches: Caches::default(),
        stage,
        half_sizes: HalfSizes::default(),
    })
}

pub(super) struct Compiler<'a> {
    pub(super) spec: &'a AgentSpec,
    pub(super) locator: Locator<'a>,
    pub(super) templates: TemplateSet,
    pub(super) errors: Vec<SpecDiagnostic>,
    pub(super) lint: Vec<Diagnostic>,
}

impl Compiler<'_> {
    pub(super) fn error(
        &mut self,
        code: &'static str,
        pointer: &str,
        on_key: bool,
        message: String,
        hint: Option<String>,
    ) {
        let diagnostic = self.locator.at(code, pointer, on_key, message, hint);
        self.errors.push(diagnostic);
    }

    fn origin(&self, pointer: &str) -> Origin {
        let location = self
            .locator
            .spans
            .find(pointer)
            .map(|s| self.locator.source.location(s.value.start));
        Origin::Spec {
            path: display_path(pointer),
            location,
        }
    }

    /// Compiles the text of a block, note or variant.
    fn body(
        &mut self,
        name: String,
        text: &Option<String>,
        template: &Option<String>,
        pointer: &str,
    ) -> Body {
        match (text, template) {
            (Some(text), None) => Body::Text(text.clone()),
            (None, Some(source)) => {
                if let Some(offset) = promptstack_template::template_operators_exceeded(source) {
                    self.too_many_operators(push_pointer(pointer, "template"), offset);
                } else if let Err(error) = self.templates.add(
                    name.clone(),
                    crate::placeholders::protect(source).into_owned(),
                ) {
                    let child = push_pointer(pointer, "template");
                    let (message, offset) = template_error(&error, source);
                    let span = self.template_span(&child, offset);
                    let mut diagnostic =
                        self.locator.at_span("template-syntax", span, message, None);
                    diagnostic.path = display_path(&child);
                    self.errors.push(diagnostic);
                }
                Body::Template(self.templates.template(name))
            }
            (Some(_), Some(_)) => {
                self.error(
                    "text-and-template",
                    pointer,
                    false,
                    format!("`{}` has both `text` and `template`", display_path(pointer)),
                    Some("use `text` for literal text, `template` for Jinja; not both".into()),
                );
                Body::Text(String::new())
            }
            (None, None) => {
                self.error(
                    "missing-text",
                    pointer,
                    false,
                    format!(
                        "`{}` has neither `text` nor `template`",
                        display_path(pointer)
                    ),
                    Some("add `text = \"…\"` (literal) or `template = \"…\"` (Jinja)".into()),
                );
                Body::Text(String::new())
            }
        }
    }

    /// The byte span in the spec file of a position inside a string value (best effort: exact for
    /// TOML multi-line and literal strings without escapes).
    fn template_span(
        &self,
        pointer: &str,
        offset_in_value: Option<usize>,
    ) -> Option<std::ops::Range<usize>> {
        let spans = self.locator.spans.find(pointer)?;
        let raw = self.locator.source.text().get(spans.value.clone())?;
        let mut start = spans.value.start;
        for delimiter in ["\"\"\"", "'''", "\"", "'"] {
            if let Some(rest) = raw.strip_prefix(delimiter) {
                start += delimiter.len();
                if delimiter.len() == 3 {
                    if rest.starts_with("\r\n") {
                        start += 2;
                    } else if rest.starts_with('\n') {
                        start += 1;
                    }
                }
                break;
            }
        }
        let at = start + offset_in_value.unwrap_or(0);
        let at = at
            .min(spans.value.end.saturating_sub(1))
            .max(spans.value.start);
        Some(at..at + 1)
    }

    /// Refuses a template or gate with more operators in one tag than the compiler can walk,
    /// located at the first operator past the limit.
    fn too_many_operators(&mut self, pointer: String, offset: usize) {
        use crate::spec::load::MAX_EXPRESSION_OPERATORS;
        let span = self.template_span(&pointer, Some(offset));
        let mut diagnostic = self.locator.at_span(
            "expression-too-long",
            span,
            format!(
                "an expression holds more than {MAX_EXPRESSION_OPERATORS} operators \
                 (operators, filters, attribute lookups and calls)"
            ),
            Some(
                "split it: compute parts with `{% set %}`, or loop over a list instead of \
                 chaining"
                    .into(),
            ),
        );
        diagnostic.path = display_path(&pointer);
        diagnostic.pointer = pointer;
        self.errors.push(diagnostic);
    }

    /// A block's or note's `max_tokens`, when given, must be at least 1.
    fn check_max_tokens(&mut self, pointer: &str, max_tokens: Option<u32>) {
        if max_tokens == Some(0) {
            self.error(
                "bad-value",
                &push_pointer(pointer, "max_tokens"),
                false,
                "`max_tokens` must be at least 1".into(),
                None,
            );
        }
    }

    fn gate(&mut self, name: String, expression: &str, pointer: &str) -> Gate {
        if let Some(offset) = promptstack_template::expression_operators_exceeded(expression) {
            self.too_many_operators(push_pointer(pointer, "when"), offset);
        } else if let Err(error) = self.templates.add_gate(name.clone(), expression) {
            let child = push_pointer(pointer, "when");
            let (message, offset) = template_error(&error, expression);
            // Errors from the wrapped form are offset by the prefix; errors from the bare
            // expression check are not.
            let offset = offset.map(|o| {
                if o >= GATE_PREFIX.len() && error.name() != Some("<expression>") {
                    o - GATE_PREFIX.len()
                } else {
                    o
                }
            });
            let span = self.template_span(&child, offset);
            let mut diagnostic = self.locator.at_span(
                "bad-gate",
                span,
                format!("gate expression does not parse: {message}"),
                Some("a gate is one Jinja expression, e.g. `'search' in tools and model.can_use_tools`".into()),
            );
            diagnostic.path = display_path(&child);
            self.errors.push(diagnostic);
        }
        Gate {
            template: name,
            expression: expression.to_owned(),
            code: SimpleGate::parse(expression, self.templates.declared())
                .map(|simple| self.templates.compile_gate(&simple)),
        }
    }

    fn units(&mut self) -> (Vec<Unit>, Vec<UnitFacts>) {
        let mut units = Vec::new();
        let mut facts = Vec::new();
        let spec = self.spec;
        for (i, block) in spec.blocks.iter().enumerate() {
            let pointer = format!("/blocks/{i}");
            let body = self.body(
                format!("blocks[{i}]"),
                &block.text,
                &block.template,
                &pointer,
            );
            let gate = block
                .when
                .as_deref()
                .map(|w| self.gate(format!("blocks[{i}].when"), w, &pointer));
            let mut variants = Vec::new();
            let mut variant_ids = HashSet::new();
            if block.variants.len() > MAX_VARIANTS {
                self.error(
                    "too-many-variants",
                    &push_pointer(&pointer, "variants"),
                    false,
                    format!(
                        "block `{}` has {} variants; at most {MAX_VARIANTS} are allowed",
                        block.id,
                        block.variants.len()
                    ),
                    None,
                );
            }
            for (j, variant) in block.variants.iter().enumerate() {
                let vp = format!("{pointer}/variants/{j}");
                if !variant_ids.insert(variant.id.clone()) {
                    self.error(
                        "duplicate-id",
                        &push_pointer(&vp, "id"),
                        false,
                        format!(
                            "variant id `{}` is used twice in block `{}`",
                            variant.id, block.id
                        ),
                        None,
                    );
                }
                let body = self.body(
                    format!("blocks[{i}].variants[{j}]"),
                    &variant.text,
                    &variant.template,
                    &vp,
                );
                let gate = self.gate(
                    format!("blocks[{i}].variants[{j}].when"),
                    &variant.when,
                    &vp,
                );
                variants.push(Variant {
                    id: variant.id.clone(),
                    gate,
                    body,
                });
            }
            self.check_max_tokens(&pointer, block.max_tokens);
            let unconditional = gate.is_none();
            units.push(Unit {
                id: Arc::from(block.id.as_str()),
                kind: block.kind,
                trust: block.trust,
                stability: block.stability,
                placement: block.placement,
                origin: Arc::new(self.origin(&pointer)),
                body,
                gate,
                variants,
                max_tokens: block.max_tokens,
                reads: Vec::new(),
                volatile_inputs: Vec::new(),
                unconditional,
                scope: None,
            });
            facts.push(UnitFacts { pointer });
        }
        for (i, note) in spec.notes.iter().enumerate() {
            let pointer = format!("/notes/{i}");
            let body = self.body(format!("notes[{i}]"), &note.text, &note.template, &pointer);
            let gate = note
                .when
                .as_deref()
                .map(|w| self.gate(format!("notes[{i}].when"), w, &pointer));
            self.check_max_tokens(&pointer, note.max_tokens);
            let unconditional = gate.is_none();
            units.push(Unit {
                id: Arc::from(note.id.as_str()),
                kind: BlockKind::Note,
                trust: note.trust,
                stability: Stability::Volatile,
                placement: Placement::Target,
                origin: Arc::new(self.origin(&pointer)),
                body,
                gate,
                variants: Vec::new(),
                max_tokens: note.max_tokens,
                reads: Vec::new(),
                volatile_inputs: Vec::new(),
                unconditional,
                scope: None,
            });
            facts.push(UnitFacts { pointer });
        }
        (units, facts)
    }

    /// Compiles the stage's subagent prompts as units scoped to their topic.
    fn subagents(
        &mut self,
        units: &mut Vec<Unit>,
        facts: &mut Vec<UnitFacts>,
    ) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        let Some(stage) = &self.spec.stage else {
            return out;
        };
        for (topic, subagent) in &stage.subagents {
            let pointer = push_pointer("/stage/subagents", topic);
            let id = format!("subagent.{topic}");
            let body = self.body(id.clone(), &subagent.text, &subagent.template, &pointer);
            out.insert(topic.clone(), units.len());
            units.push(Unit {
                id: Arc::from(id.as_str()),
                kind: BlockKind::Section,
                trust: Trust::Author,
                stability: subagent.stability,
                placement: Placement::Body,
                origin: Arc::new(self.origin(&pointer)),
                body,
                gate: None,
                variants: Vec::new(),
                max_tokens: None,
                reads: Vec::new(),
                volatile_inputs: Vec::new(),
                unconditional: true,
                scope: Some(Arc::from(topic.as_str())),
            });
            facts.push(UnitFacts { pointer });
        }
        out
    }

    fn tools(&mut self) -> Vec<CompiledTool> {
        let spec = self.spec;
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut out = Vec::new();
        for (i, tool) in spec.tools.iter().enumerate() {
            let pointer = format!("/tools/{i}");
            for problem in crate::tools::registration::descriptor_problems(tool) {
                self.error(
                    problem.code,
                    &push_pointer(&pointer, problem.field),
                    false,
                    problem.message,
                    problem.hint,
                );
            }
            if let Some(first) = seen.insert(&tool.name, i) {
                self.error(
                    "duplicate-tool",
                    &push_pointer(&pointer, "name"),
                    false,
                    format!(
                        "tool `{}` is declared twice (first as tools[{first}])",
                        tool.name
                    ),
                    None,
                );
            }
            if let Some(class) = &tool.budget
                && !spec.turn.budgets.classes.contains_key(class)
            {
                let declared: Vec<String> = spec.turn.budgets.classes.keys().cloned().collect();
                self.error(
                    "unknown-budget-class",
                    &push_pointer(&pointer, "budget"),
                    false,
                    format!("tool `{}` draws from budget class `{class}`, which [turn.budgets] does not declare", tool.name),
                    suggest(class, &declared).or_else(|| Some(format!("declare it under [turn.budgets.{class}] with its `auto` cap"))),
                );
            }
            let gate = tool
                .when
                .as_deref()
                .map(|w| self.gate(format!("tools[{i}].when"), w, &pointer));
            if let Some(gate) = &gate {
                let reads = self.templates.variables(&gate.template);
                if reads.iter().any(|p| root_of(p) == "tools") {
                    self.error(
                        "circular-gate",
                        &push_pointer(&pointer, "when"),
                        false,
                        format!(
                            "the gate of tool `{}` reads `tools`, which it helps decide",
                            tool.name
                        ),
                        Some(
                            "gate tools on settings, integrations, model, project or skills".into(),
                        ),
                    );
                }
            }
            out.push(CompiledTool {
                tool: Arc::new(crate::toolset::Tool::from_spec(tool)),
                spec: tool.clone(),
                gate,
            });
        }
        for (class, config) in &spec.turn.budgets.classes {
            if let Some(promote) = &config.promote
                && !config.intents.contains_key(&promote.intent)
            {
                let intents: Vec<String> = config.intents.keys().cloned().collect();
                let pointer = push_pointer(&push_pointer("/turn/budgets", class), "promote");
                self.error(
                    "unknown-intent",
                    &push_pointer(&pointer, "intent"),
                    false,
                    format!(
                        "budget class `{class}` is promoted to intent `{}`, which its `intents` do not declare",
                        promote.intent
                    ),
                    suggest(&promote.intent, &intents),
                );
            }
        }
        out
    }

    fn targets(&mut self, units: &[Unit]) -> Vec<CompiledTarget> {
        let spec = self.spec;
        let by_id: HashMap<&str, usize> =
            units.iter().enumerate().map(|(i, u)| (&*u.id, i)).collect();
        let mut out = Vec::new();
        if spec.targets.is_empty() {
            self.error(
                "no-targets",
                "/targets",
                true,
                "the spec declares no targets".into(),
                Some(
                    "add e.g. `[targets.system]` with `system = [\"@stable\", \"@volatile\"]`"
                        .into(),
                ),
            );
        }
        for (id, target) in &spec.targets {
            let pointer = push_pointer("/targets", id);
            let mut system = Vec::new();
            let mut placed: HashSet<usize> = HashSet::new();
            let mut has_stable = false;
            let mut has_volatile = false;
            for (i, item) in target.system.iter().enumerate() {
                let item_pointer = format!("{}/{i}", push_pointer(&pointer, "system"));
                match item.as_str() {
                    "@stable" | "@volatile" | "@body" => {
                        let (s, v) = match item.as_str() {
                            "@stable" => (true, false),
                            "@volatile" => (false, true),
                            _ => (true, true),
                        };
                        if (s && has_stable) || (v && has_volatile) {
                            self.error("duplicate-reference", &item_pointer, false, format!("target `{id}` places `{item}` twice (or overlapping with `@body`)"), None);
                        }
                        if s {
                            system.push(TargetItem::Stable);
                            has_stable = true;
                        }
                        if v {
                            system.push(TargetItem::Volatile);
                            has_volatile = true;
                        }
                    }
                    name => match by_id.get(name) {
                        Some(&u) if units[u].placement == Placement::Target => {
                            if !placed.insert(u) {
                                self.error("duplicate-reference", &item_pointer, false, format!("target `{id}` places `{name}` twice"), None);
                            }
                            system.push(TargetItem::Unit(u, units[u].id.clone()));
                        }
                        Some(_) => self.error(
                            "body-block-in-target",
                            &item_pointer,
                            false,
                            format!("`{name}` is a body block; targets place the body as `@stable`, `@volatile` or `@body`"),
                            Some(format!("to place `{name}` only in some targets, declare it with placement = \"target\"")),
                        ),
                        None => {
                            let mut candidates: Vec<String> = units.iter().filter(|u| u.placement == Placement::Target).map(|u| u.id.to_string()).collect();
                            candidates.extend(["@stable".into(), "@volatile".into(), "@body".into()]);
                            self.error("unknown-reference", &item_pointer, false, format!("target `{id}` places unknown `{name}`"), suggest(name, &candidates));
                        }
                    },
                }
            }
            if has_volatile && !has_stable {
                // Allowed, but odd enough to mention.
                self.lint.push(
                    Diagnostic::warning(
                        "volatile-without-stable",
                        format!("target `{id}` places the volatile body without the stable body"),
                    )
                    .subject(id.clone()),
                );
            }
            let mut user = Vec::new();
            for (i, name) in target.user.iter().enumerate() {
                let item_pointer = format!("{}/{i}", push_pointer(&pointer, "user"));
                match by_id.get(name.as_str()) {
                    Some(&u) if units[u].kind == BlockKind::Note => {
                        if !placed.insert(u) {
                            self.error(
                                "duplicate-reference",
                                &item_pointer,
                                false,
                                format!("target `{id}` places note `{name}` twice"),
                                None,
                            );
                        }
                        user.push((u, units[u].id.clone()));
                    }
                    Some(_) => self.error(
                        "not-a-note",
                        &item_pointer,
                        false,
                        format!("`{name}` is not a note; only notes go in the user slot"),
                        None,
                    ),
                    None => {
                        let notes: Vec<String> = units
                            .iter()
                            .filter(|u| u.kind == BlockKind::Note)
                            .map(|u| u.id.to_string())
                            .collect();
                        self.error(
                            "unknown-reference",
                            &item_pointer,
                            false,
                            format!("target `{id}` places unknown note `{name}`"),
                            suggest(name, &notes),
                        );
                    }
                }
            }
            for (note, reason) in &target.omit {
                let omit_pointer = push_pointer(&push_pointer(&pointer, "omit"), note);
                match by_id.get(note.as_str()) {
                    Some(&u) if units[u].kind == BlockKind::Note => {
                        if placed.contains(&u) {
                            self.error(
                                "omitted-and-placed",
                                &omit_pointer,
                                true,
                                format!("target `{id}` both places and omits note `{note}`"),
                                None,
                            );
                        }
                        if reason.trim().is_empty() {
                            self.error(
                                "missing-reason",
                                &omit_pointer,
                                false,
                                format!("target `{id}` omits note `{note}` without a reason"),
                                Some("say why this engine does not need the note".into()),
                            );
                        }
                    }
                    _ => self.error(
                        "unknown-reference",
                        &omit_pointer,
                        true,
                        format!("target `{id}` omits `{note}`, which is not a note"),
                        None,
                    ),
                }
            }
            let compiled = CompiledTarget {
                id: id.clone(),
                system,
                user,
                user_position: target.user_position,
                separator: target
                    .separator
                    .clone()
                    .unwrap_or_else(|| spec.render.separator.clone()),
                budget: target.budget,
                shedding: if target.budget.is_some() {
                    spec.blocks
                        .iter()
                        .map(|b| (Arc::from(b.id.as_str()), b.priority, b.pinned))
                        .chain(
                            spec.notes
                                .iter()
                                .map(|n| (Arc::from(n.id.as_str()), n.priority, n.pinned)),
                        )
                        .collect()
                } else {
                    Vec::new()
                },
            };
            self.check_target_trailing(&compiled, units, &pointer);
            out.push(compiled);
        }
        out
    }
}

/// A lowercase message and the byte offset within the template source of a minijinja error.
fn template_error(error: &minijinja::Error, _source: &str) -> (String, Option<usize>) {
    let detail = error
        .detail()
        .map(str::to_owned)
        .unwrap_or_else(|| error.kind().to_string());
    let message = lowercase_first(&detail);
    (message, error.range().map(|r| r.start))
}
