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

use std::sync::{Arc, OnceLock};

use serde::Serialize;

use crate::block::{Block, BlockState, Exclusion, LazyTokens, OverrideState};
use crate::caches::{McpResolved, StablePart};
use crate::context::{Scope, SendContext};
use crate::diagnostic::Diagnostic;
use crate::error::{Error, ErrorKind};
use crate::fingerprint::Fingerprint;
use crate::hash::{Key, KeyBuilder};
use crate::inject::{self, Prompt};
use crate::ir::AgentInner;
use crate::ir::{Body, CompiledTarget, Unit};
use crate::root::{Root, RootSources, VARIABLES, VolatileInput};
use crate::spec::{BlockKind, Placement, Stability};
use crate::template::{self, Val, path_is_empty};
use crate::tokens::{Counting, TokenCount};
use crate::toolset::{ExcludedTool, Tool, Toolset};

/// A unit's result before trimming and counting.
#[derive(Debug)]
enum Outcome {
    Excluded,
    Rendered {
        decision: Decision,
        text: String,
        empty_emissions: u32,
    },
}

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
    pub(crate) stable: Arc<StablePart>,
    /// The stable part's toolset, plus this send's MCP tools.
    pub(crate) toolset: Arc<Toolset>,
    pub(crate) volatile_blocks: Vec<Block>,
    pub(crate) volatile_text: String,
    /// Counted on first request, like the stable half's.
    pub(crate) volatile_tokens: OnceLock<TokenCount>,
    /// The body text, joined on first use (most callers compose a target instead).
    pub(crate) full: OnceLock<String>,
    /// Findings of this send only; the spec's lint and the stable part's are in `stable`.
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) targets: Arc<Vec<CompiledTarget>>,
    pub(crate) separator: String,
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

impl Assembly {
    /// Every block, included or not: the body in order, then target-placed blocks, then notes.
    pub fn blocks(&self) -> impl Iterator<Item = &Block> {
        let body = |b: &&Block| b.placement == Placement::Body;
        let placed = |b: &&Block| b.placement == Placement::Target && b.kind != BlockKind::Note;
        let notes = |b: &&Block| b.kind == BlockKind::Note;
        let all = || self.stable.blocks.iter().chain(self.volatile_blocks.iter());
        all()
            .filter(body)
            .chain(all().filter(placed))
            .chain(all().filter(notes))
    }

    /// A block (or note) by id.
    pub fn block(&self, id: &str) -> Option<&Block> {
        self.stable
            .blocks
            .iter()
            .chain(self.volatile_blocks.iter())
            .find(|b| &*b.id == id)
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
            .get_or_init(|| join_halves(&self.stable.text, &self.separator, &self.volatile_text))
    }

    /// The resolved toolset: the spec's tools whose requirements and gates hold, and the tools of
    /// this send's MCP servers, in canonical order.
    pub fn toolset(&self) -> &Toolset {
        &self.toolset
    }

    /// Findings: spec lint, excluded tools, empty variables, token limits.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.stable
            .diagnostics
            .iter()
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
        *stable
            .tokens
            .get_or_init(|| stable.counter.count(stable.counting, &stable.text))
    }

    /// Tokens of the volatile half.
    pub fn volatile_tokens(&self) -> TokenCount {
        *self.volatile_tokens.get_or_init(|| {
            self.stable
                .counter
                .count(self.stable.counting, &self.volatile_text)
        })
    }

    /// How tokens are counted for this model.
    pub fn counting(&self) -> Counting {
        self.stable.counting
    }

    /// The text placed between blocks (and between a user-slot note and the user's message).
    pub fn separator(&self) -> &str {
        &self.separator
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
        self.targets.iter().map(|t| t.id.as_str())
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
    pub(crate) fn assemble(&self, ctx: &SendContext) -> Result<Assembly, Error> {
        self.check_shapes(ctx)?;
        let key = self.stable_key(ctx);
        let stable = self.caches.stable_part(key, || self.build_stable(ctx))?;
        self.finish(ctx, stable, Some(key))
    }

    /// The implementation of [`Agent::assemble_fresh`](crate::Agent::assemble_fresh).
    pub(crate) fn assemble_fresh(&self, ctx: &SendContext) -> Result<Assembly, Error> {
        self.check_shapes(ctx)?;
        let stable = Arc::new(self.build_stable(ctx)?);
        self.finish(ctx, stable, None)
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
            let root = template::mcp_value(&listings, &local.joined(&mcp));
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
        key.add(VARIABLES)
            .add(&self.stable_variables.digest(variables));
        if self.stage.is_some() {
            key.add(topic)
                .add(&tenant_instructions.digest(Scope::TENANT_INSTRUCTIONS))
                .add(&auto_injections.digest(Scope::AUTO_INJECTIONS));
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
                .gate(&gate.template, gate.simple.as_ref(), context)
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

    /// Renders one unit: gate, then variants in order, then its template.
    fn render_unit(
        &self,
        unit: &Unit,
        context: &template::Context<'_>,
        budget: &template::RenderBudget,
    ) -> Result<Outcome, Error> {
        let decision = self.decide_unit(unit, context)?;
        let body = match decision {
            Decision::Excluded => return Ok(Outcome::Excluded),
            Decision::Default => &unit.body,
            Decision::Variant(i) => unit.variants.get(i).map_or(&unit.body, |v| &v.body),
        };
        let (text, empty_emissions) = match body {
            Body::Text(text) => (text.clone(), 0),
            Body::Template(name) => {
                let mut text = String::new();
                let empty_emissions = self
                    .templates
                    .render_into(name, context, budget, &mut text)
                    .map_err(|e| {
                        Error::new(
                            ErrorKind::Render,
                            format!("template failed to render: {}", detail(&e)),
                        )
                        .with_block(&*unit.id)
                        .with_source(e)
                    })?;
                (text, empty_emissions)
            }
        };
        Ok(Outcome::Rendered {
            decision,
            text,
            empty_emissions,
        })
    }

    /// Evaluates one unit's gate and variant gates, in order, stopping at the first true variant.
    fn decide_unit(&self, unit: &Unit, context: &template::Context<'_>) -> Result<Decision, Error> {
        if let Some(gate) = &unit.gate {
            let open = self
                .templates
                .gate(&gate.template, gate.simple.as_ref(), context)
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
                .gate(
                    &variant.gate.template,
                    variant.gate.simple.as_ref(),
                    context,
                )
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

    /// Refuses a send whose variables do not have the shapes the spec declares (a context read
    /// with [`SendContext::from_json_for`] was refused earlier, with the value's location).
    fn check_shapes(&self, ctx: &SendContext) -> Result<(), Error> {
        for (name, value) in &ctx.variables {
            let Some(shape) = self.spec.variables.get(name).and_then(|v| v.shape) else {
                continue;
            };
            if let Some(inner) = shape.mismatch(value) {
                let found = value.pointer(&inner).unwrap_or(value);
                return Err(Error::new(
                    ErrorKind::Context,
                    format!(
                        "`variables.{}{}` is {}; the spec declares {}",
                        crate::diagnostic::quote(name),
                        inner.replace('/', "."),
                        crate::spec::shape::describe(found),
                        shape.expected_at(&inner)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The `variables` root of a send: of the stable variables only, or of all of them.
    fn variables<'a>(&'a self, ctx: &'a SendContext, only_stable: bool) -> template::Variables<'a> {
        template::Variables {
            declared: &self.spec.variables,
            sent: &ctx.variables,
            only_stable,
        }
    }

    fn build_stable(&self, ctx: &SendContext) -> Result<StablePart, Error> {
        let counting = Counting::for_model(&ctx.model);
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
        let variables = self
            .read_roots
            .variables()
            .then(|| (VARIABLES, Val::Variables(self.variables(ctx, true))));
        let mut context = template::Context::new(
            Root::of(Stability::Stable)
                .filter(|root| read(root) && *root != Root::Tools)
                .map(|root| (root.name(), root.read(&sources)))
                .chain(variables),
        );
        let toolset = Arc::new(self.resolve_toolset(ctx, &context)?);
        if read(&Root::Tools) {
            let at = Root::of(Stability::Stable)
                .take_while(|root| *root != Root::Tools)
                .filter(read)
                .count();
            context.insert(at, Root::Tools.name(), Val::Tools(&toolset));
        }
        let mut diagnostics = self.lint.clone();
        // Every stable unit gives a block, and the stage a few injected ones.
        let mut blocks = Vec::with_capacity(self.units.len() + 4);
        let prompt = self.active_prompt(ctx)?;
        let budget = self.templates.budget(0);
        for unit in self
            .units
            .iter()
            .filter(|u| u.stability == Stability::Stable)
        {
            if !in_prompt(unit, prompt) {
                blocks.push(other_prompt_block(unit, prompt, counting));
                continue;
            }
            let outcome = self.render_unit(unit, &context, &budget)?;
            blocks.push(self.finish_block(
                unit,
                outcome,
                &context,
                (counting, &toolset),
                &mut diagnostics,
            ));
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
                    blocks.push(self.injected_block(injection, counting, &mut diagnostics));
                }
            }
        }
        // The roots held as template values are kept for the volatile renders of later sends;
        // the rest are read from each send again.
        let roots = context.values();
        drop(context);
        let (text, _) = join_body(&mut blocks, &self.spec.render.separator, 0);
        if let Some(last) = blocks
            .iter()
            .rev()
            .find(|b| b.placement == Placement::Body && b.is_included())
            && last.trust.is_user_controlled()
        {
            return Err(Error::new(
                    ErrorKind::TrailingUserText,
                    format!(
                        "{}-controlled block `{}` would end the stable half because every trusted block after it was excluded",
                        last.trust.as_str(),
                        last.id
                    ),
                )
                .with_block(&*last.id));
        }
        Ok(StablePart {
            toolset,
            blocks,
            text,
            tokens: OnceLock::new(),
            counter: self.caches.counter.clone(),
            fingerprint: OnceLock::new(),
            counting,
            diagnostics,
            roots,
            built_roots: OnceLock::new(),
            rendered: budget.spent(),
            model: ctx.model.clone(),
        })
    }

    /// Renders the volatile units on top of a stable part. With `memo` (the stable inputs' key), a
    /// volatile unit whose own volatile inputs are unchanged since an earlier send is reused.
    fn finish(
        &self,
        ctx: &SendContext,
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
        // The stable roots the stable part built as template values, the send's own data
        // borrowed from this send (whose stable inputs are the stable part's, by its key), every
        // variable, and the volatile roots.
        let variables = self
            .read_roots
            .variables()
            .then(|| (VARIABLES, Val::Variables(self.variables(ctx, false))));
        let context = template::Context::new(
            Root::ALL
                .into_iter()
                .filter(|root| self.read_roots.root(*root))
                .map(|root| {
                    let built = stable.built_roots.get().into_iter().flatten();
                    let value = match stable
                        .roots
                        .iter()
                        .chain(built)
                        .find(|(name, _)| *name == root.name())
                    {
                        Some((_, value)) => Val::Value(value.clone()),
                        None => root.read(&sources),
                    };
                    (root.name(), value)
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
        for name in ctx.variables.keys() {
            if !self.spec.variables.contains_key(name) {
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
        let mut volatile_blocks = Vec::with_capacity(self.units.len() + 4);
        let prompt = self.active_prompt(ctx)?;
        let budget = self.templates.budget(stable.rendered);
        for (i, unit) in self
            .units
            .iter()
            .enumerate()
            .filter(|(_, u)| u.stability == Stability::Volatile)
        {
            if !in_prompt(unit, prompt) {
                volatile_blocks.push(other_prompt_block(unit, prompt, stable.counting));
                continue;
            }
            let key = memo.map(|stable_key| self.volatile_key(stable_key, i, unit, &sources));
            if let Some((block, found)) = key.and_then(|k| self.caches.volatile_unit(k)) {
                diagnostics.extend(found);
                volatile_blocks.push(block);
                continue;
            }
            let outcome = self.render_unit(unit, &context, &budget)?;
            let mut found = Vec::new();
            let block = self.finish_block(
                unit,
                outcome,
                &context,
                (stable.counting, &stable.toolset),
                &mut found,
            );
            if let Some(key) = key {
                self.caches
                    .remember_volatile_unit(key, (block.clone(), found.clone()));
            }
            diagnostics.extend(found);
            volatile_blocks.push(block);
        }
        if let Some(stage) = &self.stage {
            let overrides = inject::overrides_for(self.spec.auto_injections.as_ref(), ctx);
            if self.authored_volatile(stage, prompt) {
                for injection in
                    inject::stage_injections(stage, ctx, prompt, &overrides, Stability::Volatile)
                {
                    volatile_blocks.push(self.injected_block(
                        injection,
                        stable.counting,
                        &mut diagnostics,
                    ));
                }
            }
            let platform = inject::platform_injection(ctx, &overrides);
            volatile_blocks.push(self.injected_block(platform, stable.counting, &mut diagnostics));
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
        let offset = if stable.text.is_empty() {
            0
        } else {
            stable.text.len() + self.spec.render.separator.len()
        };
        let (volatile_text, _) =
            join_body(&mut volatile_blocks, &self.spec.render.separator, offset);
        Ok(Assembly {
            stable,
            toolset,
            volatile_blocks,
            volatile_text,
            volatile_tokens: OnceLock::new(),
            full: OnceLock::new(),
            diagnostics,
            targets: self.targets.clone(),
            separator: self.spec.render.separator.clone(),
            user_message: ctx.user_message.clone(),
        })
    }

    /// Turns a unit's outcome into a block: trim, exclude if empty, count tokens, check limits.
    fn finish_block(
        &self,
        unit: &Unit,
        outcome: Outcome,
        context: &template::Context<'_>,
        (counting, toolset): (Counting, &Toolset),
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Block {
        let mut block = Block {
            id: unit.id.clone(),
            kind: unit.kind,
            trust: unit.trust,
            stability: unit.stability,
            placement: unit.placement,
            origin: unit.origin.clone(),
            state: BlockState::Included,
            override_state: OverrideState::Default,
            variant: None,
            text: String::new(),
            range: None,
            tokens: LazyTokens::known(TokenCount {
                count: 0,
                exact: counting.exact,
            }),
        };
        let (decision, text, empty_emissions) = match outcome {
            Outcome::Excluded => {
                let when = unit
                    .gate
                    .as_ref()
                    .map(|g| g.expression.clone())
                    .unwrap_or_default();
                block.state = BlockState::Excluded {
                    reason: Exclusion::Gate { when },
                };
                return block;
            }
            Outcome::Rendered {
                decision,
                text,
                empty_emissions,
            } => (decision, text, empty_emissions),
        };
        if let Decision::Variant(i) = decision {
            block.variant = unit.variants.get(i).map(|v| v.id.clone());
        }
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
            diagnostics.push(
                Diagnostic::warning("empty-variable", message)
                    .subject(&*unit.id)
                    .at(origin_location(&block))
                    .hint("guard it with `{% if … %}` or give the send a value"),
            );
        }
        let text = if self.spec.render.trim {
            trim_block(text)
        } else {
            text
        };
        let text = match crate::placeholders::expand(
            &text,
            |name| toolset.contains(name),
            &self.spec.components,
        ) {
            None => text,
            Some((expanded, unresolved)) => {
                for tool in unresolved.tools {
                    diagnostics.push(
                        Diagnostic::warning(
                            "unresolved-tool-token",
                            format!(
                                "`{{{{TOOL:{tool}}}}}` in `{}` names a tool this send does not offer; it is left as written",
                                unit.id
                            ),
                        )
                        .subject(&*unit.id)
                        .at(origin_location(&block))
                        .hint("gate the text on the tool (`'name' in tools`) or fix the name"),
                    );
                }
                for component in unresolved.components {
                    diagnostics.push(
                        Diagnostic::warning(
                            "unknown-component",
                            format!(
                                "`{{{{COMPONENT:{component}}}}}` in `{}` names no component; it is left as written",
                                unit.id
                            ),
                        )
                        .subject(&*unit.id)
                        .at(origin_location(&block))
                        .hint("define it under [components]"),
                    );
                }
                expanded
            }
        };
        if text.is_empty() {
            block.state = BlockState::Excluded {
                reason: Exclusion::Empty,
            };
            return block;
        }
        // Counted now only when a limit needs checking; otherwise when someone asks.
        block.tokens = match unit.max_tokens {
            Some(_) => LazyTokens::known(self.caches.counter.count(counting, &text)),
            None => LazyTokens::counted_by(self.caches.counter.clone(), counting),
        };
        if let Some(limit) = unit.max_tokens
            && block.tokens().count > limit
        {
            diagnostics.push(
                Diagnostic::error(
                    "over-token-limit",
                    format!(
                        "`{}` is {} tokens; its limit is {limit}",
                        unit.id,
                        block.tokens().display()
                    ),
                )
                .subject(&*unit.id)
                .at(origin_location(&block))
                .hint("shorten the text or raise `max_tokens`"),
            );
        }
        block.text = text;
        block
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

    /// Turns an injection into a block: included with its text, or excluded with its reason.
    fn injected_block(
        &self,
        injection: inject::Injection,
        counting: Counting,
        diagnostics: &mut Vec<Diagnostic>,
    ) -> Block {
        // Decision findings are reported once, by `override_findings`.
        diagnostics.extend(injection.diagnostics);
        let preview = injection.preview;
        let (state, text, tokens) = match injection.exclusion {
            None => (
                BlockState::Included,
                preview.text,
                LazyTokens::counted_by(self.caches.counter.clone(), counting),
            ),
            Some(reason) => (
                BlockState::Excluded { reason },
                String::new(),
                LazyTokens::known(TokenCount {
                    count: 0,
                    exact: counting.exact,
                }),
            ),
        };
        Block {
            id: Arc::from(preview.id.as_str()),
            kind: injection.kind,
            trust: preview.trust,
            stability: preview.stability,
            placement: Placement::Body,
            origin: Arc::new(injection.origin),
            state,
            override_state: preview.override_state,
            variant: None,
            text,
            range: None,
            tokens,
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

/// The block of a unit that belongs to another prompt than the active one.
fn other_prompt_block(unit: &Unit, prompt: Prompt<'_>, counting: Counting) -> Block {
    Block {
        id: unit.id.clone(),
        kind: unit.kind,
        trust: unit.trust,
        stability: unit.stability,
        placement: unit.placement,
        origin: unit.origin.clone(),
        state: BlockState::Excluded {
            reason: Exclusion::OtherPrompt {
                active: prompt.to_string(),
            },
        },
        override_state: OverrideState::Default,
        variant: None,
        text: String::new(),
        range: None,
        tokens: LazyTokens::known(TokenCount {
            count: 0,
            exact: counting.exact,
        }),
    }
}

fn origin_location(block: &Block) -> Option<crate::diagnostic::Location> {
    match &*block.origin {
        crate::block::Origin::Spec { location, .. } => location.clone(),
        _ => None,
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

/// Joins the included body blocks with the separator, recording each one's byte range (offset by
/// `offset` in the final `full` text). Returns the text and the number of blocks joined.
fn join_body(blocks: &mut [Block], separator: &str, offset: usize) -> (String, usize) {
    let joins = |b: &Block| b.placement == Placement::Body && b.is_included();
    // Sized once, so the text is written without growing (and copying) it.
    let (count, bytes) = blocks
        .iter()
        .filter(|b| joins(b))
        .fold((0usize, 0), |(n, len), b| (n + 1, len + b.text.len()));
    let mut text = String::with_capacity(bytes + separator.len() * count.saturating_sub(1));
    let mut joined = 0;
    for block in blocks.iter_mut().filter(|b| joins(b)) {
        if joined > 0 {
            text.push_str(separator);
        }
        let start = offset + text.len();
        text.push_str(&block.text);
        block.range = Some(start..offset + text.len());
        joined += 1;
    }
    (text, joined)
}

/// Strips leading and trailing whitespace (space, tab, CR, LF) — the characters template
/// tags and TOML multi-line strings leave behind — and nothing else.
fn trim_block(text: String) -> String {
    let trimmed = text.trim_matches([' ', '\t', '\r', '\n']);
    if trimmed.len() == text.len() {
        text
    } else {
        trimmed.to_owned()
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
