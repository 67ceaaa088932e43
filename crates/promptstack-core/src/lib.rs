//! The pure promptstack engine.
//!
//! It decides, for every send, exactly what the model sees, and cleans up what the model writes back.
//! The core does no IO, reads no clock and draws no randomness: time, nonces and tenant text arrive
//! in the send context, so the same inputs always give byte-identical output.
//!
//! The pipeline:
//!
//! 1. [`spec`]: parse an agent spec (TOML or JSON) and check it against its schema;
//! 2. [`Agent`]: compile it — templates, gates, and every spec-level invariant;
//! 3. [`Agent::assemble`]: for a [`SendContext`], resolve the [`Toolset`](toolset::Toolset),
//!    render the blocks, split the stable and volatile halves, count tokens, fingerprint → an
//!    [`Assembly`];
//! 4. [`Assembly::compose`]: the exact texts one target (engine) sends (and the
//!    [`FullPrompt`](compose::FullPrompt) of "copy full prompt").
//!
//! Around the pipeline:
//!
//! - [`fence`]: wraps untrusted content (pages, files, MCP resources, tool results) in nonce
//!   markers it cannot forge, defanging look-alike markers and chat-template control tokens.
//! - [`stream`]: the model-output pipeline, turning streamed text into display-ready Markdown with
//!   resolved citations and one math style, plus the eval scorer that counts citations, and the
//!   [`SourceSnapshot`](stream::SourceSnapshot) the Turn persists.
//! - [`layers`]: reusable agent-family layers (escaping, guidelines, site patterns, context
//!   files, compact harness state), also registered as template filters.
//! - [`canonical_url`]: the one canonical form of a URL (budgets, sources, evals).
//! - [`sites`]: site patterns (`*.example.com`, exact hosts, ports, path prefixes) and which
//!   URLs they match (skills and site instructions for the tabs of a send).
//! - [`tools`]: provider-safe tool names, MCP namespacing and merging, UI labels.
//! - [`turn`]: the Turn runtime: dedupe, budgets and the source registry around tool executors.
//! - [`inject`]: what a multi-tenant platform appends to a stage's prompt (capability guidance,
//!   tenant instructions, the UTC date and time), the one override decision point, subagent
//!   visibility, registry manifests.
//! - [`refresh`]: the [`Refresher`](refresh::Refresher), which keeps a live session's prompt
//!   current across variable changes and topic switches.
//! - [`provider`]: provider request bodies (Anthropic, OpenAI Chat and Responses, Gemini) with
//!   cache breakpoints planned from a rules table, and a cache simulator.
//!
//! The fence and the stream processor are their own crates (`promptstack-fence`,
//! `promptstack-stream`) with no template, schema or tokenizer dependency; they are re-exported
//! here under these two names.
//!
//! The template layer (checked templates and gates, the engine-free evaluators, the `layers`
//! filters) is its own crate too, `promptstack-template`, below this one and internal to it: the
//! records it reads in place ([`context::Skill`], [`context::ContextFile`], [`context::Now`]), a
//! variable's declaration ([`spec::VariableSpec`] and its parts), [`layers`], [`sites`] and
//! [`diagnostic::quote`] are defined there and re-exported here, at these paths.
//!
//! ```
//! use promptstack_core::{Agent, SendContext, SpecFormat};
//!
//! let spec = r#"
//! spec_version = 1
//! name = "hello"
//!
//! [[blocks]]
//! id = "intro"
//! trust = "author"
//! stability = "stable"
//! template = "You are {{ model.name }}, a careful assistant."
//!
//! [[notes]]
//! id = "datetime"
//! trust = "platform"
//! template = "Current date: {{ now.date }}"
//!
//! [targets.system]
//! system = ["@stable", "datetime"]
//! "#;
//! let agent = Agent::from_source(spec.as_bytes(), "hello.toml", SpecFormat::Toml).unwrap();
//! let send = br#"{
//!   "now": "2026-11-30T09:15:00+01:00",
//!   "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"}
//! }"#;
//! let ctx = SendContext::from_json(send, "send.json").unwrap();
//! let assembly = agent.assemble(&ctx).unwrap();
//! let composed = assembly.compose("system").unwrap();
//! assert_eq!(composed.system, "You are GPT-4o, a careful assistant.\n\nCurrent date: 2026-11-30");
//! ```

mod agent;
mod assemble;
pub mod block;
mod caches;
pub mod canonical_url;
pub mod compose;
pub mod context;
pub mod diagnostic;
mod error;
mod fingerprint;
mod hash;
pub mod inject;
mod ir;
pub mod layers;
mod placeholders;
pub mod provider;
pub mod refresh;
mod root;
pub mod spec;
pub mod tokens;
pub mod tools;
pub mod toolset;
pub mod turn;

#[cfg(test)]
mod template_tests;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

pub use promptstack_fence as fence;
pub use promptstack_stream as stream;
pub use promptstack_template::sites;

// One path per public item. The root holds the handles an embedder loads, assembles and matches
// errors with; each is defined in a module that is not public (`context::send` and `spec::load`
// are crate-visible submodules of public modules), so the root is its only path. Everything else
// is reached through the public module that defines or re-exports it (`block::Block`,
// `compose::Composition`, `diagnostic::Diagnostic`, `spec::AgentSpec`, `toolset::Toolset`, …);
// the root never repeats it. The public-API test checks this.
pub use agent::Agent;
pub use assemble::Assembly;
pub use caches::CacheStats;
pub use context::send::SendContext;
pub use error::{Error, ErrorKind};
pub use fingerprint::Fingerprint;
pub use root::Root;
pub use spec::load::{SpecError, SpecFormat};

// A shorthand inside the crate for a type whose public path is its module's.
pub(crate) use spec::AgentSpec;

/// The handles an application shares across threads are `Send + Sync`; this fails to compile if
/// one of them stops being so.
const _: () = {
    const fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<Agent>();
    shared_across_threads::<Assembly>();
    shared_across_threads::<Error>();
    shared_across_threads::<fence::Fence>();
    shared_across_threads::<stream::Processor>();
    shared_across_threads::<SendContext>();
};
