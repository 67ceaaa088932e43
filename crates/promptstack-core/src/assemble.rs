//! Assembling: an agent and a send context in, an [`Assembly`] out.
//!
//! The pipeline, in order: resolve the toolset (tool gates over the context, canonical order) →
//! build the stable template roots → render the stable blocks (gate, variant, template, trim) →
//! join the stable half, check that it ends trusted → render the volatile blocks and notes against
//! the stable roots plus the clock and the message → join the volatile half. Nothing is tokenised
//! or fingerprinted on the way: a block's tokens (unless its `max_tokens` needs checking), each
//! half's total and the fingerprint are made on first request and kept.
//!
//! The stable part is a pure function of the stable inputs, so it is memoised by a key over exactly
//! those inputs: a send that changes only the clock, the message or volatile variables re-renders
//! only the volatile blocks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use promptstack_template::{self as template, Val, path_is_empty};
use serde::Serialize;

use crate::block::{
    Block, BlockState, Exclusion, LazyTokens, OverrideState, Source, Span, Status, Verdict,
};
use crate::caches::{McpResolved, StablePart, VolatileUnit, chosen_counting};
use crate::context::{Scope, SendContext};
use crate::diagnostic::Diagnostic;
use crate::error::{Error, ErrorKind};
use crate::fingerprint::Fingerprint;
use crate::hash::{Key, KeyBuilder};
use crate::inject::{self, Prompt};
use crate::ir::AgentInner;
use crate::ir::{Body, Unit};
use crate::root::{Root, RootSources, VARIABLES, VARIABLES_INDEX, VolatileInput};
use crate::spec::{BlockKind, Placement, Stability, Trust};
use crate::tokens::{Counting, TokenCount};
use crate::toolset::{ExcludedTool, Tool, Toolset};

/// What the gates decided for one unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decision {
    /// Its gate is false.
    Excluded,
    /// Included with its own text.
    Default,
    /// Included with the text of this variant.
    Variant(usize),
}

/// The result of assembling: every block with provenance, the halves, the toolset, diagnostics and
/// the fingerprint. Compose a target's text with [`Assembly::compose`].
#[derive(Clone)]
pub struct Assembly {
    /// The agent that built it: its units, targets and separator, read by composing and by the
    /// blocks made on request.
    pub(crate) agent: Arc<AgentInner>,
    pub(crate) stable: Arc<StablePart>,
    /// The stable part's toolset, plus this send's MCP tools.
    pub(crate) toolset: Arc<Toolset>,
    /// What was decided for the volatile blocks and notes, in order.
    pub(crate) volatile: Vec<Verdict>,
    /// The volatile half: the included volatile body blocks, joined.
    pub(crate) volatile_text: String,
    /// The texts of the included volatile target-placed blocks and notes.
    pub(crate) volatile_placed: String,
    /// The public volatile blocks, made from the verdicts on first request.
    pub(crate) volatile_blocks: OnceLock<Vec<Block>>,
    /// Counted on first request, like the stable half's.
    pub(crate) volatile_tokens: OnceLock<TokenCount>,
    /// The body text, joined on first use (most callers compose a target instead).
    pub(crate) full: OnceLock<String>,
    /// Findings of this send only; the spec's lint is the agent's and the stable part's are in
    /// `stable`.
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// The send's user message, which a request or a Turn built from the assembly places.
    pub(crate) user_message: Option<String>,
}

impl std::fmt::Debug for Assembly {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembly")
            .field("fingerprint", &self.fingerprint())
            .field("blocks", &self.blocks().count())
            .finish()
    }
}

/// One block of an assembly as composing reads it, without making the public [`Block`].
pub(crate) struct Placed<'a> {
    pub id: &'a Arc<str>,
    pub text: &'a str,
    pub stability: Stability,
    pub trust: Trust,
    /// Its byte range in its half's body text, for a body block.
    pub body: Option<std::ops::Range<usize>>,
}

impl Assembly {
    /// Every block, included or not: the body in order, then target-placed blocks, then notes.
    ///
    /// The blocks are made on the first call (of this method or [`Assembly::block`]) and kept:
    /// assembling and composing do not need them.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        let body = |b: &&Block| b.placement == Placement::Body;
        let placed = |b: &&Block| b.placement == Placement::Target && b.kind != BlockKind::Note;
        let notes = |b: &&Block| b.kind == BlockKind::Note;
        let (stable, volatile) = (self.stable_blocks(), self.volatile_blocks());
        let all = || stable.iter().chain(volatile.iter());
        all()
            .filter(body)
            .chain(all().filter(placed))
            .chain(all().filter(notes))
    }

    /// A block (or note) by id.
    pub fn block(&self, id: &str) -> Option<&Block> {
        self.stable_blocks()
            .iter()
            .chain(self.volatile_blocks().iter())
            .find(|b| &*b.id == id)
    }

    /// The stable blocks, made once per stable part.
    fn stable_blocks(&self) -> &[Block] {
        let stable = &*self.stable;
        stable
            .blocks
            .get_or_init(|| self.make_blocks(&stable.verdicts, &stable.text, &stable.placed, 0))
    }

    /// The volatile blocks, made once per assembly.
    fn volatile_blocks(&self) -> &[Block] {
        self.volatile_blocks.get_or_init(|| {
            let offset = if self.stable.text.is_empty() {
                0
            } else {
                self.stable.text.len() + self.separator().len()
            };
            self.make_blocks(
                &self.volatile,
                &self.volatile_text,
                &self.volatile_placed,
                offset,
            )
        })
    }

    /// Makes the public blocks of one half from its verdicts; body ranges are offset by where
    /// the half starts in the full body text.
    fn make_blocks(
        &self,
        verdicts: &[Verdict],
        body: &str,
        placed: &str,
        offset: usize,
    ) -> Vec<Block> {
        let counting = self.stable.counting();
        let zero = LazyTokens::known(TokenCount {
            count: 0,
            exact: counting.exact,
        });
        verdicts
            .iter()
            .map(|verdict| {
                let mut block = match &verdict.source {
                    Source::Unit(index) => {
                        let unit = &self.agent.units[*index];
                        Block {
                            id: unit.id.clone(),
                            kind: unit.kind,
                            trust: unit.trust,
                            stability: unit.stability,
                            placement: unit.placement,
                            origin: unit.origin.clone(),
                            state: BlockState::Included,
                            override_state: OverrideState::Default,
                            variant: verdict
                                .variant
                                .and_then(|i| unit.variants.get(i))
                                .map(|v| v.id.clone()),
                            text: String::new(),
                            range: None,
                            tokens: zero.clone(),
                        }
                    }
                    Source::Injected(block) => (**block).clone(),
                };
                let reason = match &verdict.status {
                    Status::Included => None,
                    Status::GateFalse => Some(Exclusion::Gate {
                        when: match &verdict.source {
                            Source::Unit(index) => self.agent.units[*index]
                                .gate
                                .as_ref()
                                .map(|g| g.expression.clone())
                                .unwrap_or_default(),
                            Source::Injected(_) => String::new(),
                        },
                    }),
                    Status::Empty => Some(Exclusion::Empty),
                    Status::Excluded(reason) => Some(reason.clone()),
                };
                if let Some(reason) = reason {
                    block.state = BlockState::Excluded { reason };
                }
                if verdict.is_included() {
                    block.text = verdict.text(body, placed).to_owned();
                    if let Span::Body(range) = &verdict.span {
                        block.range = Some(offset + range.start..offset + range.end);
                    }
                    block.tokens = match verdict.tokens {
                        Some(count) => LazyTokens::known(count),
                        None => LazyTokens::counted_by(self.agent.caches.counter.clone(), counting),
                    };
                } else {
                    block.tokens = zero.clone();
                }
                block
            })
            .collect()
    }

    /// The id, stability and trust of a verdict's block.
    fn head<'a>(&'a self, verdict: &'a Verdict) -> (&'a Arc<str>, Stability, Trust) {
        match &verdict.source {
            Source::Unit(index) => {
                let unit = &self.agent.units[*index];
                (&unit.id, unit.stability, unit.trust)
            }
            Source::Injected(block) => (&block.id, block.stability, block.trust),
        }
    }

    /// The included body blocks of the stable half, then of the volatile half, in order, as
    /// composing reads them.
    pub(crate) fn body(&self, stability: Stability) -> impl Iterator<Item = Placed<'_>> {
        let (verdicts, text, placed) = match stability {
            Stability::Stable => (
                &self.stable.verdicts,
                &self.stable.text,
                &self.stable.placed,
            ),
            Stability::Volatile => (&self.volatile, &self.volatile_text, &self.volatile_placed),
        };
        verdicts
            .iter()
            .filter(|v| v.is_included() && matches!(v.span, Span::Body(_)))
            .map(move |verdict| self.placed(verdict, text, placed))
    }

    /// The block of a unit, by its place among the agent's units, as composing reads it; `None`
    /// when the unit made no block on this send or its block is excluded.
    pub(crate) fn unit(&self, index: usize) -> Option<Placed<'_>> {
        let is_unit = |v: &&Verdict| matches!(v.source, Source::Unit(i) if i == index);
        let stable = &*self.stable;
        let (verdict, text, placed) = match stable.verdicts.iter().find(is_unit) {
            Some(verdict) => (verdict, &stable.text, &stable.placed),
            None => (
                self.volatile.iter().find(is_unit)?,
                &self.volatile_text,
                &self.volatile_placed,
            ),
        };
        verdict
            .is_included()
            .then(|| self.placed(verdict, text, placed))
    }

    fn placed<'a>(&'a self, verdict: &'a Verdict, text: &'a str, placed: &'a str) -> Placed<'a> {
        let (id, stability, trust) = self.head(verdict);
        Placed {
            id,
            text: verdict.text(text, placed),
            stability,
            trust,
            body: match &verdict.span {
                Span::Body(range) => Some(range.clone()),
                _ => None,
            },
        }
    }

    /// The stable half: the included stable body blocks, joined. Byte-identical across the sends of
    /// a thread as long as the stable inputs are.
    pub fn stable(&self) -> &str {
        &self.stable.text
    }

    /// The volatile half: the included volatile body blocks, joined.
    pub fn volatile(&self) -> &str {
        &self.volatile_text
    }

    /// The whole body: the stable half, the separator, the volatile half.
    pub fn full(&self) -> &str {
        self.full
            .get_or_init(|| join_halves(&self.stable.text, self.separator(), &self.volatile_text))
    }

    /// The resolved toolset: the spec's tools whose requirements and gates hold, and the tools of
    /// this send's MCP servers, in canonical order.
    pub fn toolset(&self) -> &Toolset {
        &self.toolset
    }

    /// Findings: spec lint, excluded tools, empty variables, token limits.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.agent
            .lint
            .iter()
            .chain(self.stable.diagnostics.iter())
            .chain(self.diagnostics.iter())
    }

    /// SHA-256 over the stable half and the model descriptor, computed on first request and kept
    /// with the stable part, so every assembly that reuses it shares the one computation.
    pub fn fingerprint(&self) -> Fingerprint {
        *self
            .stable
            .fingerprint
            .get_or_init(|| Fingerprint::of_stable(&self.stable.model, &self.stable.text))
    }

    /// Tokens of the stable half (counted on the joined text, so separators are included).
    pub fn stable_tokens(&self) -> TokenCount {
        let stable = &*self.stable;
        *stable.tokens.get_or_init(|| {
            self.agent
                .caches
                .counter
                .count(stable.counting(), &stable.text)
        })
    }

    /// Tokens of the volatile half.
    pub fn volatile_tokens(&self) -> TokenCount {
        *self.volatile_tokens.get_or_init(|| {
            self.agent
                .caches
                .counter
                .count(self.stable.counting(), &self.volatile_text)
        })
    }

    /// How tokens are counted for this model.
    pub fn counting(&self) -> Counting {
        self.stable.counting()
    }

    /// The text placed between blocks (and between a user-slot note and the user's message).
    pub fn separator(&self) -> &str {
        &self.agent.spec.render.separator
    }

    /// The model of the send the assembly was built for.
    pub fn model(&self) -> &crate::context::ModelDescriptor {
        &self.stable.model
    }

    /// The user's message of the send the assembly was built for, if it had one.
    pub fn user_message(&self) -> Option<&str> {
        self.user_message.as_deref()
    }

    /// The ids of the targets this assembly can compose.
    pub fn target_ids(&self) -> impl Iterator<Item = &str> {
        self.agent.targets.iter().map(|t| t.id.as_str())
    }
}

/// The version tag of the assembly JSON format.
pub const ASSEMBLY_FORMAT: &str = "promptstack.assembly/v1";

impl Serialize for Assembly {
    /// The assembly JSON format (`promptstack.assembly/v1`): a versioned format, stable across
    /// releases within a version.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct View<'a> {
            format: &'static str,
            fingerprint: Fingerprint,
            counting: Counting,
            stable_tokens: TokenCount,
            volatile_tokens: TokenCount,
            stable: &'a str,
            volatile: &'a str,
            full: &'a str,
            blocks: Vec<&'a Block>,
            tools: Vec<&'a Tool>,
            excluded_tools: &'a [ExcludedTool],
            diagnostics: Vec<&'a Diagnostic>,
        }
        View {
            format: ASSEMBLY_FORMAT,
            fingerprint: self.fingerprint(),
            counting: self.counting(),
            stable_tokens: self.stable_tokens(),
            volatile_tokens: self.volatile_tokens(),
            stable: self.stable(),
            volatile: self.volatile(),
            full: self.full(),
            blocks: self.blocks().collect(),
            tools: self.toolset().tools().iter().map(|t| t.as_ref()).collect(),
            excluded_tools: self.toolset().excluded(),
            diagnostics: self.diagnostics().collect(),
        }
        .serialize(serializer)
    }
}

impl AgentInner {
    /// The implementation of [`Agent::count_tokens`](crate::Agent::count_tokens).
    pub(crate) fn count_tokens(&self, counting: Counting, text: &str) -> TokenCount {
        self.caches.counter.count(counting, text)
    }

    /// The implementation of [`Agent::assemble`](crate::Agent::assemble).
    pub(crate) fn assemble(self: &Arc<Self>, ctx: &SendContext) -> Result<Assembly, Error> {
        let facts = self.variable_facts(ctx);
        check_shapes(&self.spec, &facts)?;
        let key = self.stable_key(ctx);
        let stable = self
            .caches
            .stable_part(key, || self.build_stable(ctx, &facts))?;
        self.finish(ctx, &facts, stable, Some(key))
    }

    /// The implementation of [`Agent::assemble_fresh`](crate::Agent::assemble_fresh).
    pub(crate) fn assemble_fresh(self: &Arc<Self>, ctx: &SendContext) -> Result<Assembly, Error> {
        let facts = self.variable_facts(ctx);
        check_shapes(&self.spec, &facts)?;
        let stable = Arc::new(self.build_stable(ctx, &facts)?);
        self.finish(ctx, &facts, stable, None)
    }

    /// A key over a volatile unit's identity, the stable inputs, and the volatile inputs it reads.
    fn volatile_key(
        &self,
        stable_key: Key,
        index: usize,
        unit: &Unit,
        sources: &RootSources<'_>,
    ) -> Key {
        let ctx = sources.ctx;
        let mut key = KeyBuilder::new("promptstack/volatile-unit/v2");
        key.add(&stable_key).add(&index);
        for input in &unit.volatile_inputs {
            match input {
                VolatileInput::Root(root) => {
                    key.add(root.name());
                    root.add_to_key(sources, &mut key);
                }
                VolatileInput::Variable(name) => {
                    let value = ctx.variables.get(name).or_else(|| {
                        self.spec
                            .variables
                            .get(name)
                            .and_then(|v| v.default.as_ref())
                    });
                    key.add(name.as_str()).add(&value);
                }
                VolatileInput::AllVariables => {
                    key.add(VARIABLES).add(&ctx.variables);
                }
            }
        }
        key.finish()
    }

    /// The MCP tools and `mcp` root of a send's listings, built once per distinct listings (and
    /// tool capability) and shared by later sends; the key also stands for the listings in the
    /// volatile memo.
    fn resolve_mcp(&self, ctx: &SendContext, local: &Toolset) -> (Key, Arc<McpResolved>) {
        let can_use_tools = ctx.model.can_use_tools();
        let key = KeyBuilder::new("promptstack/mcp-listings/v1")
            .add(&ctx.mcp_servers)
            .add(&can_use_tools)
            .finish();
        let resolved = self.caches.mcp(key, || {
            let mcp = crate::toolset::ResolvedMcp::new(
                &ctx.mcp_servers,
                self.tools.iter().map(|t| t.spec.name.as_str()),
                can_use_tools,
            );
            // The servers table sees the listings as the merge does: a repeated name is refused.
            let listings = crate::tools::mcp::reconcile_listings(&ctx.mcp_servers);
            let root = crate::root::mcp_value(&listings, &local.joined(&mcp));
            McpResolved { mcp, root }
        });
        (key, resolved)
    }

    /// A key over exactly the inputs the stable part depends on: the stable roots (see
    /// [`Root::add_to_key`]), the stable spec variables and, for a stage, its per-send inputs.
    ///
    /// The large inputs enter by their digests, each in its own scope, kept in the send's
    /// [`Fact`](crate::context::Fact)s after the first key: a thread's send sent again is keyed by
    /// lookups.
    pub(crate) fn stable_key(&self, ctx: &SendContext) -> Key {
        // Every field of the send is accounted for here, so a new one cannot be forgotten: it is
        // read through a root (keyed by the root), a variable, or the stage, or it is volatile.
        let SendContext {
            now: _,
            model: _,
            settings: _,
            integrations: _,
            user: _,
            project: _,
            skills: _,
            user_message: _,
            variables,
            cwd: _,
            context_files: _,
            messages_path: _,
            harness_state: _,
            tabs: _,
            mcp_servers: _,
            topic,
            tenant_instructions,
            auto_injections,
        } = ctx;
        let sources = RootSources {
            ctx,
            toolset: &Toolset::default(),
            mcp: None,
        };
        let mut key = KeyBuilder::new("promptstack/stable-inputs/v3");
        for root in Root::of(Stability::Stable) {
            key.add(root.name());
            root.add_to_key(&sources, &mut key);
        }
        key.add(VARIABLES);
        self.stable_variables.add_to_key(variables, &mut key);
        if self.stage.is_some() {
            key.add(topic);
            tenant_instructions.add_whole_to(Scope::TENANT_INSTRUCTIONS, &mut key);
            auto_injections.add_whole_to(Scope::AUTO_INJECTIONS, &mut key);
        }
        key.finish()
    }

    fn resolve_toolset(
        &self,
        ctx: &SendContext,
        roots: &template::Context<'_>,
    ) -> Result<Toolset, Error> {
        let mut included = Vec::new();
        let mut excluded = Vec::new();
        if !ctx.model.can_use_tools() {
            // A model without tool use gets no tools at all, whatever the gates say.
            for tool in &self.tools {
                excluded.push(ExcludedTool {
                    name: tool.spec.name.clone(),
                    reason: "the model cannot call tools".into(),
                });
            }
            return Ok(Toolset::new(included, excluded));
        }
        let open = self.decide_tools(ctx, roots)?;
        for (tool, open) in self.tools.iter().zip(open) {
            match open {
                Err(reason) => excluded.push(ExcludedTool {
                    name: tool.spec.name.clone(),
                    reason,
                }),
                Ok(true) => included.push(tool.tool.clone()),
                Ok(false) => {
                    let when = tool
                        .gate
                        .as_ref()
                        .map(|g| g.expression.as_str())
                        .unwrap_or_default();
                    excluded.push(ExcludedTool {
                        name: tool.spec.name.clone(),
                        reason: format!("gate false: {when}"),
                    });
                }
            }
        }
        Ok(Toolset::new(included, excluded))
    }

    /// Decides every tool, in declaration order: `Err(reason)` for an unmet requirement, else
    /// whether its gate is true.
    ///
    /// Requirements come first and a tool whose requirements fail is not gated. Tools often share
    /// a gate (every tool of one integration), so each distinct expression is evaluated once.
    fn decide_tools(
        &self,
        ctx: &SendContext,
        context: &template::Context<'_>,
    ) -> Result<Vec<Result<bool, String>>, Error> {
        let mut decided: Vec<(&str, bool)> = Vec::new();
        let mut open = Vec::with_capacity(self.tools.len());
        let gates = template::GateContext::new(context);
        for tool in &self.tools {
            if let Some(reason) = crate::toolset::unmet_requirement(&tool.spec.requires, ctx) {
                open.push(Err(reason));
                continue;
            }
            let Some(gate) = &tool.gate else {
                open.push(Ok(true));
                continue;
            };
            if let Some(&(_, known)) = decided.iter().find(|(e, _)| *e == gate.expression) {
                open.push(Ok(known));
                continue;
            }
            let value = self
                .templates
                .gate(&gate.template, gate.code.as_ref(), &gates)
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Gate,
                        format!(
                            "the gate of tool `{}` failed: {}",
                            tool.spec.name,
                            detail(&e)
                        ),
                    )
                    .with_block(tool.spec.name.clone())
                    .with_source(e)
                })?;
            decided.push((&gate.expression, value));
            open.push(Ok(value));
        }
        Ok(open)
    }

    /// Writes one unit's block into its half: gate, then variants in order, then its text or
    /// template, trimmed, with `{{TOOL:…}}` and `{{COMPONENT:…}}` tokens expanded; excluded if
    /// its gate is false or its text is empty. A token count is made only when a limit needs it.
    fn write_unit(
        &self,
        (index, unit): (usize, &Unit),
        gates: &template::GateContext<'_, '_>,
        budget: &template::RenderBudget,
        ((counting, model), toolset): (Counted<'_>, &Toolset),
        half: &mut Half<'_>,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Result<(), Error> {
        let decision = self.decide_unit(unit, gates)?;
        let context = gates.context();
        let (body, variant) = match decision {
            Decision::Excluded => {
                half.verdicts
                    .push(Verdict::excluded(Source::Unit(index), Status::GateFalse));
                return Ok(());
            }
            Decision::Default => (&unit.body, None),
            Decision::Variant(i) => (
                unit.variants.get(i).map_or(&unit.body, |v| &v.body),
                Some(i),
            ),
        };
        let place = half.begin(unit.placement);
        let out = half.out(&place);
        let start = place.start;
        let empty_emissions = match body {
            Body::Text(text) => {
                out.push_str(text);
                0
            }
            Body::Template(template) => self
                .templates
                .render_into(template, context, budget, out)
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Render,
                        format!("template failed to render: {}", detail(&e)),
                    )
                    .with_block(&*unit.id)
                    .with_source(e)
                })?,
        };
        if empty_emissions > 0 {
            let empty: Vec<&str> = unit
                .reads
                .iter()
                .map(String::as_str)
                .filter(|p| path_is_empty(context.value(), p))
                .collect();
            let message = if empty.is_empty() {
                format!("an expression in `{}` rendered empty", unit.id)
            } else {
                format!(
                    "{} rendered empty in `{}`",
                    empty
                        .iter()
                        .map(|p| format!("`{p}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    unit.id
                )
            };
            diagnostics.push(about(
                unit,
                Diagnostic::warning("empty-variable", message)
                    .hint("guard it with `{% if … %}` or give the send a value"),
            ));
        }
        if self.spec.render.trim {
            trim_from(out, start);
        }
        if let Some((expanded, unresolved)) = crate::placeholders::expand(
            &out[start..],
            |name| toolset.contains(name),
            &self.spec.components,
        ) {
            for tool in unresolved.tools {
                diagnostics.push(about(
                    unit,
                    Diagnostic::warning(
                        "unresolved-tool-token",
                        format!(
                            "`{{{{TOOL:{tool}}}}}` in `{}` names a tool this send does not offer; it is left as written",
                            unit.id
                        ),
                    )
                    .hint("gate the text on the tool (`'name' in tools`) or fix the name"),
                ));
            }
            for component in unresolved.components {
                diagnostics.push(about(
                    unit,
                    Diagnostic::warning(
                        "unknown-component",
                        format!(
                            "`{{{{COMPONENT:{component}}}}}` in `{}` names no component; it is left as written",
                            unit.id
                        ),
                    )
                    .hint("define it under [components]"),
                ));
            }
            out.truncate(start);
            out.push_str(&expanded);
        }
        if out.len() == start {
            half.abandon(place);
            half.verdicts
                .push(Verdict::excluded(Source::Unit(index), Status::Empty));
            return Ok(());
        }
        // Counted now only when a limit needs checking; otherwise when someone asks.
        let tokens = unit.max_tokens.map(|limit| {
            let tokens = self
                .caches
                .counter
                .count(chosen_counting(counting, model), &out[start..]);
            if tokens.count > limit {
                diagnostics.push(about(
                    unit,
                    Diagnostic::error(
                        "over-token-limit",
                        format!(
                            "`{}` is {} tokens; its limit is {limit}",
                            unit.id,
                            tokens.display()
                        ),
                    )
                    .hint("shorten the text or raise `max_tokens`"),
                ));
            }
            tokens
        });
        half.commit(place, unit.trust, Source::Unit(index), variant, tokens);
        Ok(())
    }

    /// Evaluates one unit's gate and variant gates, in order, stopping at the first true variant.
    fn decide_unit(
        &self,
        unit: &Unit,
        gates: &template::GateContext<'_, '_>,
    ) -> Result<Decision, Error> {
        if let Some(gate) = &unit.gate {
            let open = self
                .templates
                .gate(&gate.template, gate.code.as_ref(), gates)
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Gate,
                        format!("gate `{}` failed: {}", gate.expression, detail(&e)),
                    )
                    .with_block(&*unit.id)
                    .with_source(e)
                })?;
            if !open {
                return Ok(Decision::Excluded);
            }
        }
        for (i, variant) in unit.variants.iter().enumerate() {
            let chosen = self
                .templates
                .gate(&variant.gate.template, variant.gate.code.as_ref(), gates)
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Gate,
                        format!("gate of variant `{}` failed: {}", variant.id, detail(&e)),
                    )
                    .with_block(&*unit.id)
                    .with_source(e)
                })?;
            if chosen {
                return Ok(Decision::Variant(i));
            }
        }
        Ok(Decision::Default)
    }

    /// About how many blocks a half of this stability has: one per unit, and room for a
    /// stage's injected blocks.
    fn blocks_of(&self, stability: Stability) -> usize {
        let units = self
            .units
            .iter()
            .filter(|u| u.stability == stability)
            .count();
        units + if self.stage.is_some() { 8 } else { 0 }
    }

    /// What a send holds for each declared variable, made once per assembly: both halves'
    /// `variables` roots read it, by the places the agent's templates and gates were compiled to.
    fn variable_facts<'a>(&'a self, ctx: &'a SendContext) -> template::VariableFacts<'a> {
        template::VariableFacts::new(
            self.templates.declared(),
            &self.spec.variables,
            &ctx.variables,
        )
    }

    fn build_stable(
        &self,
        ctx: &SendContext,
        facts: &template::VariableFacts<'_>,
    ) -> Result<StablePart, Error> {
        // Chosen only if a unit's limit needs a count; kept with the part either way.
        let counting = OnceLock::new();
        let no_tools = Toolset::default();
        let sources = RootSources {
            ctx,
            toolset: &no_tools,
            mcp: None,
        };
        // Only the roots some template can read are built (see `ReadRoots`); the send's own data
        // is borrowed, not copied into template values (see `Root::read`).
        // Tool gates see everything stable except the toolset itself, which joins the context
        // once they are decided, at its place among the roots.
        let read = |root: &Root| self.read_roots.root(*root);
        let variables = self.read_roots.variables().then(|| {
            let variables = template::Variables {
                facts,
                only_stable: true,
            };
            (VARIABLES_INDEX, VARIABLES, Val::Variables(variables))
        });
        let mut context = template::Context::of_roots(
            Root::of(Stability::Stable)
                .filter(|root| read(root) && *root != Root::Tools)
                .map(|root| (root.index(), root.name(), root.read(&sources)))
                .chain(variables),
        );
        let toolset = self.caches.toolset(self.resolve_toolset(ctx, &context)?);
        if read(&Root::Tools) {
            let at = Root::of(Stability::Stable)
                .take_while(|root| *root != Root::Tools)
                .filter(read)
                .count();
            context.insert(
                at,
                Root::Tools.index(),
                Root::Tools.name(),
                Val::Tools(&*toolset),
            );
        }
        let mut diagnostics = Vec::new();
        // Every stable unit gives a block, and the stage a few injected ones.
        let mut half = Half::new(
            &self.spec.render.separator,
            self.blocks_of(Stability::Stable),
            &self.half_sizes.stable,
        );
        let prompt = self.active_prompt(ctx)?;
        let budget = self.templates.budget(0);
        let gates = template::GateContext::new(&context);
        for unit in self
            .units
            .iter()
            .enumerate()
            .filter(|(_, u)| u.stability == Stability::Stable)
        {
            if !in_prompt(unit.1, prompt) {
                half.verdicts.push(other_prompt(unit.0, prompt));
                continue;
            }
            self.write_unit(
                unit,
                &gates,
                &budget,
                ((&counting, &ctx.model), &toolset),
                &mut half,
                &mut diagnostics,
            )?;
        }
        if let Some(stage) = &self.stage {
            let overrides = inject::overrides_for(self.spec.auto_injections.as_ref(), ctx);
            // Findings about the spec's own overrides are lint, located, reported at compile time;
            // a send's stored overrides are checked here, once per stable part.
            if ctx.auto_injections.is_some() {
                diagnostics.extend(inject::override_findings(stage, &overrides));
            }
            if !self.authored_volatile(stage, prompt) {
                for injection in
                    inject::stage_injections(stage, ctx, prompt, &overrides, Stability::Stable)
                {
                    write_injected(&mut half, injection, &mut diagnostics);
                }
            }
        }
        // The roots held as template values are kept for the volatile renders of later sends;
        // the rest are read from each send again.
        let roots = context.values();
        drop(context);
        half.close(&self.half_sizes.stable);
        if let Some((trust, at)) = half.last
            && trust.is_user_controlled()
        {
            let id = match &half.verdicts[at].source {
                Source::Unit(index) => self.units[*index].id.clone(),
                Source::Injected(block) => block.id.clone(),
            };
            return Err(Error::new(
                    ErrorKind::TrailingUserText,
                    format!(
                        "{}-controlled block `{id}` would end the stable half because every trusted block after it was excluded",
                        trust.as_str(),
                    ),
                )
                .with_block(&*id));
        }
        Ok(StablePart {
            toolset,
            verdicts: half.verdicts,
            text: half.text,
            placed: half.placed,
            blocks: OnceLock::new(),
            tokens: OnceLock::new(),
            fingerprint: OnceLock::new(),
            counting,
            diagnostics,
            roots,
            built_roots: OnceLock::new(),
            rendered: budget.spent(),
            model: self.caches.model(&ctx.model),
        })
    }

    /// Renders the volatile units on top of a stable part. With `memo` (the stable inputs' key), a
    /// volatile unit whose own volatile inputs are unchanged since an earlier send is reused.
    fn finish(
        self: &Arc<Self>,
        ctx: &SendContext,
        facts: &template::VariableFacts<'_>,
        stable: Arc<StablePart>,
        memo: Option<Key>,
    ) -> Result<Assembly, Error> {
        let (toolset, mcp) = if ctx.mcp_servers.is_empty() {
            (stable.toolset.clone(), None)
        } else {
            let (key, resolved) = self.resolve_mcp(ctx, &stable.toolset);
            let toolset = Arc::new(stable.toolset.joined(&resolved.mcp));
            (toolset, Some((key, resolved.root.clone())))
        };
        let sources = RootSources {
            ctx,
            toolset: &stable.toolset,
            mcp,
        };
        // The roots the volatile units can read, and nothing else (nothing else renders against
        // this context): those the stable part built as template values, the send's own data
        // borrowed from this send (whose stable inputs are the stable part's, by its key), and
        // the volatile roots; `variables` with every variable.
        let variables = self.volatile_roots.variables().then(|| {
            let variables = template::Variables {
                facts,
                only_stable: false,
            };
            (VARIABLES_INDEX, VARIABLES, Val::Variables(variables))
        });
        let context = template::Context::of_roots(
            Root::ALL
                .into_iter()
                .filter(|root| self.volatile_roots.root(*root))
                .map(|root| {
                    let built = stable.built_roots.get().into_iter().flatten();
                    let value = match stable
                        .roots
                        .iter()
                        .chain(built)
                        .find(|(name, _)| template::same_name(name, root.name()))
                    {
                        Some((_, value)) => Val::Value(value.clone()),
                        None => root.read(&sources),
                    };
                    (root.index(), root.name(), value)
                })
                .chain(variables),
        );
        let mut diagnostics: Vec<Diagnostic> = Vec::new();
        for skipped in toolset.skipped_servers() {
            let failure = &skipped.failure;
            if failure.stage == crate::tools::mcp::McpFailureStage::Conflict {
                diagnostics.push(
                    Diagnostic::warning(
                        "mcp-server-conflict",
                        format!(
                            "MCP server `{}` contributes no tools to this send: {}",
                            skipped.server, failure.message
                        ),
                    )
                    .subject(skipped.server.clone())
                    .hint("give every MCP server of a send its own name; a repeated name is refused rather than guessed at"),
                );
                continue;
            }
            diagnostics.push(
                Diagnostic::warning(
                    "mcp-server-skipped",
                    format!(
                        "MCP server `{}` contributes no tools to this send: {}",
                        skipped.server, failure.message
                    ),
                )
                .subject(skipped.server.clone())
                .hint("the server is retried in the background; the stable half does not change"),
            );
        }
        for tab in ctx.tabs.all() {
            if let Err(error) = crate::sites::parse_url(&tab.url) {
                diagnostics.push(
                    Diagnostic::warning(
                        "bad-tab-url",
                        format!(
                            "tab {} has the URL `{}`, which does not parse ({error}); no site pattern matches it",
                            tab.id, tab.url
                        ),
                    )
                    .hint("send the tab's full URL, scheme included"),
                );
            }
        }
        // The facts were made in one pass over the send's variables and the declarations, which
        // noted whether any is undeclared; only then are they looked at again, to name it.
        for name in ctx.variables.keys().filter(|_| facts.any_undeclared()) {
            if template::named_entry(&self.spec.variables, name).is_none() {
                diagnostics.push(
                    Diagnostic::warning(
                        "undeclared-variable",
                        format!(
                            "the send sets `variables.{name}`, which the spec does not declare"
                        ),
                    )
                    .hint("declare it under [variables] or remove it from the send"),
                );
            }
        }
        let mut half = Half::new(
            &self.spec.render.separator,
            self.blocks_of(Stability::Volatile),
            &self.half_sizes.volatile,
        );
        let prompt = self.active_prompt(ctx)?;
        let budget = self.templates.budget(stable.rendered);
        let gates = template::GateContext::new(&context);
        for (i, unit) in self
            .units
            .iter()
            .enumerate()
            .filter(|(_, u)| u.stability == Stability::Volatile)
        {
            if !in_prompt(unit, prompt) {
                half.verdicts.push(other_prompt(i, prompt));
                continue;
            }
            let key = memo.map(|stable_key| self.volatile_key(stable_key, i, unit, &sources));
            if let Some(found) = key.and_then(|k| self.caches.volatile_unit(k)) {
                diagnostics.extend(found.diagnostics.iter().cloned());
                half.repeat(&found.verdict, &found.text, unit.placement, unit.trust);
                continue;
            }
            let first_finding = diagnostics.len();
            self.write_unit(
                (i, unit),
                &gates,
                &budget,
                ((&stable.counting, &stable.model), &stable.toolset),
                &mut half,
                &mut diagnostics,
            )?;
            if let Some(key) = key
                && let Some(verdict) = half.verdicts.last()
            {
                let text = verdict.text(&half.text, &half.placed).to_owned();
                self.caches.remember_volatile_unit(
                    key,
                    Arc::new(VolatileUnit {
                        verdict: verdict.clone(),
                        text,
                        diagnostics: diagnostics[first_finding..].to_vec(),
                    }),
                );
            }
        }
        if let Some(stage) = &self.stage {
            let overrides = inject::overrides_for(self.spec.auto_injections.as_ref(), ctx);
            if self.authored_volatile(stage, prompt) {
                for injection in
                    inject::stage_injections(stage, ctx, prompt, &overrides, Stability::Volatile)
                {
                    write_injected(&mut half, injection, &mut diagnostics);
                }
            }
            let platform = inject::platform_injection(ctx, &overrides);
            write_injected(&mut half, platform, &mut diagnostics);
        }
        if context.is_built() && stable.built_roots.get().is_none() {
            // The engine made the stable roots read from this send into template values; they
            // are the stable part's too (its key covers them), so later sends reuse them.
            let built = context
                .values()
                .into_iter()
                .filter(|(name, _)| {
                    Root::from_name(name).is_some_and(|root| root.stability() == Stability::Stable)
                        && !stable.roots.iter().any(|(kept, _)| kept == name)
                })
                .collect();
            let _ = stable.built_roots.set(built);
        }
        drop(context);
        half.close(&self.half_sizes.volatile);
        Ok(Assembly {
            agent: Arc::clone(self),
            stable,
            toolset,
            volatile: half.verdicts,
            volatile_text: half.text,
            volatile_placed: half.placed,
            volatile_blocks: OnceLock::new(),
            volatile_tokens: OnceLock::new(),
            full: OnceLock::new(),
            diagnostics,
            user_message: ctx.user_message.clone(),
        })
    }
}

impl AgentInner {
    /// The prompt a send builds: the main prompt, or the subagent prompt of its topic.
    pub(crate) fn active_prompt<'c>(&self, ctx: &'c SendContext) -> Result<Prompt<'c>, Error> {
        let Some(topic) = ctx.topic.as_deref() else {
            return Ok(Prompt::Main);
        };
        let known = self.stage.as_ref().map(|s| &s.subagents);
        if known.is_some_and(|k| k.contains_key(topic)) {
            return Ok(Prompt::Subagent(topic));
        }
        let names = known
            .map(|k| k.keys().map(String::as_str).collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        Err(Error::new(
            ErrorKind::NotFound,
            if names.is_empty() {
                format!("the send's topic is `{topic}`, but this agent has no subagents")
            } else {
                format!("the send's topic is `{topic}`; this stage's subagents are: {names}")
            },
        ))
    }

    /// Whether the active prompt's authored body can change between sends, in which case the
    /// injected blocks that follow it are volatile too.
    pub(crate) fn authored_volatile(
        &self,
        stage: &crate::ir::CompiledStage,
        prompt: Prompt<'_>,
    ) -> bool {
        match prompt {
            Prompt::Main => stage.main_volatile,
            Prompt::Subagent(topic) => stage
                .subagents
                .get(topic)
                .is_some_and(|&i| self.units[i].stability == Stability::Volatile),
        }
    }
}

/// Whether a unit takes part in the active prompt. Notes and target-placed blocks belong to every
/// prompt; body blocks of the spec to the main prompt; a subagent's prompt to its topic.
fn in_prompt(unit: &Unit, prompt: Prompt<'_>) -> bool {
    match (&unit.scope, prompt) {
        (None, _) if unit.placement != Placement::Body || unit.kind == BlockKind::Note => true,
        (None, Prompt::Main) => true,
        (Some(topic), Prompt::Subagent(active)) => &**topic == active,
        _ => false,
    }
}

/// The verdict on a unit that belongs to another prompt than the active one.
fn other_prompt(index: usize, prompt: Prompt<'_>) -> Verdict {
    Verdict::excluded(
        Source::Unit(index),
        Status::Excluded(Exclusion::OtherPrompt {
            active: prompt.to_string(),
        }),
    )
}

/// Writes an injected block into its half: included with its text, or excluded with its reason.
fn write_injected(
    half: &mut Half<'_>,
    injection: inject::Injection,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // Decision findings are reported once, by `override_findings`.
    diagnostics.extend(injection.diagnostics);
    let preview = injection.preview;
    // The state and the count are the verdict's, set when the block is made.
    let block = Block {
        id: Arc::from(preview.id.as_str()),
        kind: injection.kind,
        trust: preview.trust,
        stability: preview.stability,
        placement: Placement::Body,
        origin: Arc::new(injection.origin),
        state: BlockState::Included,
        override_state: preview.override_state,
        variant: None,
        text: String::new(),
        range: None,
        tokens: LazyTokens::known(TokenCount {
            count: 0,
            exact: false,
        }),
    };
    let trust = block.trust;
    let source = Source::Injected(Box::new(block));
    if let Some(reason) = injection.exclusion {
        half.verdicts
            .push(Verdict::excluded(source, Status::Excluded(reason)));
        return;
    }
    let place = half.begin(Placement::Body);
    half.out(&place).push_str(&preview.text);
    half.commit(place, trust, source, None, None);
}

/// How a half's token limits are counted: the counting its stable part keeps, chosen for the
/// model on first need (see [`chosen_counting`]).
type Counted<'p> = (&'p OnceLock<Counting>, &'p crate::context::ModelDescriptor);

/// A finding about a unit's block: its subject the unit, located where the spec declares it.
fn about(unit: &Unit, finding: Diagnostic) -> Diagnostic {
    let location = match &*unit.origin {
        crate::block::Origin::Spec { location, .. } => location.clone(),
        _ => None,
    };
    finding.subject(&*unit.id).at(location)
}

/// One half as it is written: the body text its included body blocks are joined into (with the
/// separator between them), the texts of its target-placed blocks and notes, a verdict per block,
/// and the last included body block, which decides whether user text would end the half.
///
/// A block is written straight into the text it joins: the separator goes in before it, on the
/// chance that it is included, and is taken out again with its text if it turns out empty. So
/// the half is written once, not rendered block by block and then copied into place.
struct Half<'s> {
    text: String,
    placed: String,
    verdicts: Vec<Verdict>,
    separator: &'s str,
    /// The trust of the last included body block, and its verdict's place.
    last: Option<(Trust, usize)>,
}

/// Where a block's text is being written (see [`Half::begin`]).
struct Place {
    body: bool,
    /// The length of the text before the block (and its separator).
    mark: usize,
    /// Where the block's own text starts.
    start: usize,
}

/// The most a half reserves up front from the length of the last one (see [`HalfSizes`](crate::ir::HalfSizes)), so
/// one huge send does not make every later one reserve as much.
const MAX_RESERVED_BYTES: usize = 1 << 20;

impl<'s> Half<'s> {
    /// An empty half, its text reserved at the length of the last half of its kind.
    fn new(separator: &'s str, blocks: usize, last: &AtomicUsize) -> Self {
        let reserve = last.load(Ordering::Relaxed).min(MAX_RESERVED_BYTES);
        Self {
            text: String::with_capacity(reserve),
            placed: String::new(),
            verdicts: Vec::with_capacity(blocks),
            separator,
            last: None,
        }
    }

    /// Records the half's length for the next one, and gives back what was reserved and not
    /// used when that is most of it (the text is kept with the stable part).
    fn close(&mut self, last: &AtomicUsize) {
        last.store(self.text.len(), Ordering::Relaxed);
        if self.text.capacity() > 2 * self.text.len() {
            self.text.shrink_to_fit();
        }
    }

    /// Starts a block of `placement`: a body block after the separator when another body block
    /// is already in.
    fn begin(&mut self, placement: Placement) -> Place {
        let body = placement == Placement::Body;
        let out = if body {
            &mut self.text
        } else {
            &mut self.placed
        };
        let mark = out.len();
        if body && self.last.is_some() {
            out.push_str(self.separator);
        }
        Place {
            body,
            mark,
            start: out.len(),
        }
    }

    /// The text a block started with [`Half::begin`] is written to.
    fn out(&mut self, place: &Place) -> &mut String {
        if place.body {
            &mut self.text
        } else {
            &mut self.placed
        }
    }

    /// Takes a block out again (it rendered empty), with its separator.
    fn abandon(&mut self, place: Place) {
        let mark = place.mark;
        self.out(&place).truncate(mark);
    }

    /// Keeps a block whose text is in, from `place.start` to the end of its text.
    fn commit(
        &mut self,
        place: Place,
        trust: Trust,
        source: Source,
        variant: Option<usize>,
        tokens: Option<TokenCount>,
    ) {
        let end = self.out(&place).len();
        let range = place.start..end;
        let span = if place.body {
            self.last = Some((trust, self.verdicts.len()));
            Span::Body(range)
        } else {
            Span::Placed(range)
        };
        self.verdicts.push(Verdict {
            source,
            status: Status::Included,
            variant,
            span,
            tokens,
        });
    }

    /// Writes a block an earlier send rendered: its verdict and text, at its place in this half.
    fn repeat(&mut self, verdict: &Verdict, text: &str, placement: Placement, trust: Trust) {
        if !verdict.is_included() {
            self.verdicts.push(verdict.clone());
            return;
        }
        let place = self.begin(placement);
        self.out(&place).push_str(text);
        self.commit(
            place,
            trust,
            verdict.source.clone(),
            verdict.variant,
            verdict.tokens,
        );
    }
}

/// The stable half, the separator and the volatile half (no separator when either is empty).
fn join_halves(stable: &str, separator: &str, volatile: &str) -> String {
    match (stable.is_empty(), volatile.is_empty()) {
        (_, true) => stable.to_owned(),
        (true, false) => volatile.to_owned(),
        (false, false) => {
            let mut full = String::with_capacity(stable.len() + separator.len() + volatile.len());
            full.push_str(stable);
            full.push_str(separator);
            full.push_str(volatile);
            full
        }
    }
}

/// Strips the leading and trailing whitespace (space, tab, CR, LF) — the characters template
/// tags and TOML multi-line strings leave behind — and nothing else, of the text from `start` on.
fn trim_from(text: &mut String, start: usize) {
    const BLANK: [char; 4] = [' ', '\t', '\r', '\n'];
    let end = start + text[start..].trim_end_matches(BLANK).len();
    text.truncate(end);
    let leading = text[start..].len() - text[start..].trim_start_matches(BLANK).len();
    if leading > 0 {
        text.drain(start..start + leading);
    }
}

/// The detail of a minijinja error without its debug dump.
pub(crate) fn detail(error: &minijinja::Error) -> String {
    let mut message = error
        .detail()
        .map(str::to_owned)
        .unwrap_or_else(|| error.kind().to_string());
    if let Some(line) = error.line() {
        message.push_str(&format!(" (template line {line})"));
    }
    crate::diagnostic::lowercase_first(&message)
}
/// Refuses a send whose variables do not have the shapes the spec declares (a context read with
/// [`SendContext::from_json_for`] was refused earlier, with the value's location). The first
/// misfit in name order was found by the pass that made the facts.
fn check_shapes(
    spec: &crate::spec::AgentSpec,
    facts: &template::VariableFacts<'_>,
) -> Result<(), Error> {
    let Some((name, value)) = facts.misfit() else {
        return Ok(());
    };
    let Some(shape) = spec.variables.get(name).and_then(|v| v.shape) else {
        return Ok(());
    };
    let inner = shape.mismatch(value).unwrap_or_default();
    let found = value.pointer(&inner).unwrap_or(value);
    Err(Error::new(
        ErrorKind::Context,
        format!(
            "`variables.{}{}` is {}; the spec declares {}",
            crate::diagnostic::quote(name),
            inner.replace('/', "."),
            crate::spec::describe(found),
            shape.expected_at(&inner)
        ),
    ))
}
