//! The API boundary of the engine: [`Agent`], a cheap handle over a compiled program and its
//! caches, with every public operation on it.
//!
//! Each method here is a thin entry point: compiling lives in [`compile`] (with the spec-level
//! invariants in [`checks`] and the lint rules in [`lint`]); assembling, requests, injections and
//! the cache simulation live in their own modules and work on the shared [`AgentInner`]. Nothing
//! below this module imports it, so the implementation modules form layers under one face.

mod checks;
mod compile;
mod lint;

use std::sync::Arc;

use crate::assemble::Assembly;
use crate::caches::CacheStats;
use crate::compose::full::{self, FullPrompt};
use crate::context::SendContext;
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::inject::manifests::{self, Published, Registry};
use crate::inject::{self, InjectionPreview};
use crate::ir::AgentInner;
use crate::provider::sim::{SimConfig, SimReport};
use crate::provider::{Conversation, Request, RequestOptions, Rules};
use crate::spec::{AgentSpec, SourceMap, SpecError, SpecFormat, load};
use crate::tokens::{Counting, TokenCount};
use crate::toolset::Tool;
use crate::turn::{ResultWrapper, ToolExecutor, Turn, TurnBuilder, TurnConfig, TurnError};

/// A compiled agent: a validated spec with its templates, ready to [`assemble`](Agent::assemble).
///
/// An `Agent` is a handle: cloning it is cheap (one reference count) and every clone shares the
/// same compiled program and the same caches, so an assembly through one clone reuses the stable
/// half another clone built. It is immutable apart from its caches (the stable half by input key,
/// token counts by text), is `Send + Sync`, and is meant to be built once and shared.
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentInner>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.inner.spec.name)
            .field("source", &self.inner.source.name())
            .finish()
    }
}

impl Agent {
    /// Parses, validates and compiles a spec from its source bytes.
    ///
    /// `name` is used in locations (usually the file path); `format` is the syntax.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] with every problem found, each with its location and a hint.
    ///
    /// # Example
    ///
    /// ```
    /// use promptstack_core::{Agent, SpecFormat};
    ///
    /// let spec = r#"
    /// spec_version = 1
    /// name = "hello"
    ///
    /// [[blocks]]
    /// id = "intro"
    /// trust = "author"
    /// stability = "stable"
    /// text = "You are a helpful assistant."
    ///
    /// [targets.system]
    /// system = ["@stable"]
    /// "#;
    /// let agent = Agent::from_source(spec.as_bytes(), "hello.toml", SpecFormat::Toml).unwrap();
    /// assert_eq!(agent.name(), "hello");
    /// ```
    pub fn from_source(bytes: &[u8], name: &str, format: SpecFormat) -> Result<Self, SpecError> {
        let parsed = load::parse(bytes, name, format)?;
        Self::compile(parsed)
    }

    /// Compiles an already parsed spec.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] with every semantic problem found.
    pub fn compile(parsed: load::ParsedSpec) -> Result<Self, SpecError> {
        Self::compile_with_registry(parsed, &Registry::new())
    }

    /// Parses, validates and compiles a spec whose stage references registry capabilities
    /// (`capability:<slug>`), resolving them against `registry`.
    ///
    /// # Errors
    ///
    /// As [`Agent::from_source`], plus `unknown-capability` for a reference the registry lacks.
    pub fn from_source_with_registry(
        bytes: &[u8],
        name: &str,
        format: SpecFormat,
        registry: &Registry,
    ) -> Result<Self, SpecError> {
        let parsed = load::parse(bytes, name, format)?;
        Self::compile_with_registry(parsed, registry)
    }

    /// Compiles an already parsed spec, resolving registry capabilities against `registry`.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] with every semantic problem found.
    pub fn compile_with_registry(
        parsed: load::ParsedSpec,
        registry: &Registry,
    ) -> Result<Self, SpecError> {
        Ok(Self {
            inner: Arc::new(compile::compile(parsed, registry)?),
        })
    }

    /// The memory the templates of one assembly may use unless [`Agent::with_template_memory`]
    /// says otherwise: 64 MiB.
    pub const DEFAULT_TEMPLATE_MEMORY: u64 = promptstack_template::DEFAULT_MEMORY;

    /// Sets the memory the templates of one assembly may use, in bytes.
    ///
    /// Half of it bounds the data any one render creates: strings, lists, joins and filter
    /// results are checked against it *before* they are allocated, and the render fails with an
    /// out-of-fuel error when it runs out. The other half bounds the rendered texts the renders
    /// of one assembly keep, across every template. The same budget bounds the work of a render:
    /// an instruction costs as much as 64 bytes, with at most 5,000,000 instructions whatever the
    /// memory. A failing render is an [`ErrorKind::Render`](crate::ErrorKind::Render) naming
    /// the block.
    #[must_use]
    ///
    /// The agent this returns has caches of its own: when other clones of this agent exist, the
    /// compiled program is copied and they keep their memory limit and their caches.
    pub fn with_template_memory(mut self, bytes: u64) -> Self {
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                inner.templates.set_memory(bytes);
                inner.caches.clear();
            }
            None => {
                let mut inner = self.inner.without_caches();
                inner.templates.set_memory(bytes);
                self.inner = Arc::new(inner);
            }
        }
        self
    }

    /// The memory the templates of one assembly may use, in bytes.
    pub fn template_memory(&self) -> u64 {
        self.inner.templates.memory()
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.inner.spec.name
    }

    /// The spec the agent was compiled from.
    pub fn spec(&self) -> &AgentSpec {
        &self.inner.spec
    }

    /// The ids of the targets, in order.
    pub fn target_ids(&self) -> impl Iterator<Item = &str> {
        self.inner.targets.iter().map(|t| t.id.as_str())
    }

    /// Findings about the spec itself (independent of any send), such as notes a target forgets.
    pub fn lint(&self) -> &[Diagnostic] {
        &self.inner.lint
    }

    /// How many texts were tokenised so far (memo misses), for observing cache behaviour.
    pub fn tokenized_texts(&self) -> u64 {
        self.inner.caches.counter.tokenized()
    }

    /// The source the agent was compiled from.
    pub fn source(&self) -> &SourceMap {
        &self.inner.source
    }

    /// Counts the tokens of any text the way this agent's assemblies do (memoised).
    pub fn count_tokens(&self, counting: Counting, text: &str) -> TokenCount {
        self.inner.count_tokens(counting, text)
    }

    /// Assembles the prompt for one send, reusing the stable part when the stable inputs are
    /// unchanged since an earlier send.
    ///
    /// # Errors
    ///
    /// A template or gate that fails at render time ([`ErrorKind::Render`], [`ErrorKind::Gate`]),
    /// or a user-controlled block that would end the stable half ([`ErrorKind::TrailingUserText`]).
    pub fn assemble(&self, ctx: &SendContext) -> Result<Assembly, Error> {
        self.inner.assemble(ctx)
    }

    /// Assembles without reusing (or storing) a stable part: every block is rendered. Token counts
    /// are still memoised. Gives the same result as [`Agent::assemble`].
    ///
    /// # Errors
    ///
    /// As [`Agent::assemble`].
    pub fn assemble_fresh(&self, ctx: &SendContext) -> Result<Assembly, Error> {
        self.inner.assemble_fresh(ctx)
    }

    /// Forgets every reusable result: stable parts, memoised volatile units, resolved MCP
    /// listings, tool units and token counts. The next assembly does all the work a first send
    /// does (only the compiled templates remain). For measuring cold assembly; applications never
    /// need it.
    pub fn clear_caches(&self) {
        self.inner.caches.clear();
    }

    /// Counters of every cache since the agent was compiled.
    pub fn cache_stats(&self) -> CacheStats {
        self.inner.caches.stats()
    }

    /// Targets whose pinned blocks alone exceed the target's token budget, counted from the
    /// blocks that are always present with literal text (an `over-budget` error each): such a
    /// target can never fit, whatever the send. Gated, variant and template blocks are left to the
    /// checks against sends, where the composition reports the same error.
    pub fn pinned_over_budget(&self, counting: Counting) -> Vec<Diagnostic> {
        self.inner.pinned_over_budget(counting)
    }

    /// Token limits that can be checked without a send: every block or note with `max_tokens`
    /// whose text (and every variant's text) is literal, counted with `counting` after the same
    /// trimming assembly applies. One `over-token-limit` error per text over its limit.
    ///
    /// Templated texts depend on the send; [`crate::Agent::assemble`] checks them per send.
    pub fn literal_token_limits(&self, counting: Counting) -> Vec<Diagnostic> {
        self.inner.literal_token_limits(counting)
    }

    /// Builds the request body of one send for a provider, with its cache plan.
    ///
    /// The system text is the target's composition, split at its stability boundaries; the user
    /// slot's notes are placed around the assembly's user message (the send's `user_message`),
    /// which becomes the last message. Without one the request continues the conversation as it
    /// is (a tool-call turn). Everything the request needs from the send is in the assembly.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`](crate::ErrorKind::NotFound) for an unknown target,
    /// [`ErrorKind::Rules`](crate::ErrorKind::Rules) when the rules have no row for the model,
    /// [`ErrorKind::Request`](crate::ErrorKind::Request) when there is nothing to send, when a new
    /// user message would follow unanswered tool calls, or for a malformed Gemini cached-content
    /// name.
    pub fn request(
        &self,
        assembly: &Assembly,
        conversation: &Conversation,
        rules: &Rules,
        options: &RequestOptions,
    ) -> Result<Request, Error> {
        self.inner.request(assembly, conversation, rules, options)
    }

    /// Replays a thread of `config.turns` user turns built from `sends` and reports, for our
    /// requests and for the naive baseline, what the provider's cache would serve.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Request`] without sends, or once `config.cancel` is set (checked before each
    /// turn); otherwise whatever assembling or building a request returns.
    pub fn simulate_cache(
        &self,
        sends: &[SendContext],
        rules: &Rules,
        config: &SimConfig,
    ) -> Result<SimReport, Error> {
        self.inner.simulate_cache(sends, rules, config)
    }

    /// Every injectable block of the send's active prompt, with its exact text and state, built
    /// by the same functions as the live assembly: capability guidance, tenant instructions, the
    /// platform context. A block an override removed is listed (as `removed`, with the text it
    /// would ship), and so is an override for a capability the stage no longer enables
    /// (`excluded`), so the inspector shows the union of the built blocks and the configuration.
    /// Empty for a spec without a stage.
    ///
    /// # Errors
    ///
    /// [`crate::ErrorKind::NotFound`] for a topic the stage has no subagent for.
    pub fn preview_injections(&self, ctx: &SendContext) -> Result<Vec<InjectionPreview>, Error> {
        let Some(stage) = &self.inner.stage else {
            return Ok(Vec::new());
        };
        let prompt = self.inner.active_prompt(ctx)?;
        let volatile = self.inner.authored_volatile(stage, prompt);
        Ok(inject::preview_injections(
            stage,
            self.inner.spec.auto_injections.as_ref(),
            ctx,
            prompt,
            volatile,
        ))
    }

    /// Renders the full prompt of `target` (or of the only target) for a send. It is the live
    /// assembly's own composition, so the copy is the wire text; rendering never degrades: any
    /// failure is an error rather than a different text.
    ///
    /// # Errors
    ///
    /// As [`crate::Agent::assemble`] and [`crate::Assembly::compose`]; [`ErrorKind::NotFound`]
    /// when no target is given and the spec has several.
    pub fn render_full(
        &self,
        ctx: &SendContext,
        target: Option<&str>,
    ) -> Result<FullPrompt, Error> {
        let target = full::full_prompt_target(self.target_ids(), target)?;
        let assembly = self.assemble(ctx)?;
        full::render_full(&assembly, target)
    }

    /// Publishes this agent's stage for `ctx`: the authored text of `target`'s main prompt (the
    /// composed target up to the blocks the platform injects, with `ctx`'s variables and no
    /// topic), expanded by [`publish`] with the stage's references and capability configuration,
    /// the registry's manifests, and the send's overrides (else the spec's).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] for a spec without a stage or an unknown target, any error of
    /// assembling or composing, and the errors of [`publish`].
    pub fn publish_stage(
        &self,
        ctx: &SendContext,
        target: &str,
        registry: &Registry,
    ) -> Result<Published, Error> {
        let mut main = ctx.clone();
        main.topic = None;
        manifests::publish_stage(&self.inner.spec, ctx, registry, || {
            Ok(self.assemble(&main)?.compose(target)?.authored().to_owned())
        })
    }

    /// The spec's `[turn]` configuration (budgets per class and intent, the source cap).
    pub fn turn_config(&self) -> &TurnConfig {
        &self.inner.spec.turn
    }

    /// Starts building the Turn for one send of this agent: the spec's `[turn]` configuration,
    /// the `/slug` intent of the assembly's user message, and every tool the assembly offers with the executor
    /// `executor_for` gives it. Untrusted results go through `wrapper` (a [`Fence`](crate::fence::Fence) in
    /// production). Seed the conversation's sources with [`TurnBuilder::sources`], then build.
    ///
    /// # Errors
    ///
    /// [`TurnErrorKind::MissingExecutor`](crate::turn::TurnErrorKind::MissingExecutor) for an
    /// offered tool without an executor.
    pub fn turn_builder(
        &self,
        assembly: &Assembly,
        wrapper: Arc<dyn ResultWrapper>,
        executor_for: impl FnMut(&Tool) -> Option<Arc<dyn ToolExecutor>>,
    ) -> Result<TurnBuilder<'_>, TurnError> {
        let mut builder = Turn::builder(&self.inner.spec.turn, wrapper);
        if let Some(message) = assembly.user_message() {
            builder = builder.user_message(message);
        }
        builder.toolset(assembly.toolset(), executor_for)
    }
}
