//! The template roots: one table that says, for every top-level name a template can read, its
//! stability, its trust, how its value is built from the send, and how it enters the cache keys.
//!
//! Everything that must agree about the roots is derived from [`Root`] with exhaustive matches:
//! the compiler's variable classification, the volatile inputs a unit reads, the stable key, the
//! volatile key, the roots the assembler builds, and the table in `docs/spec.md` (checked by a
//! test). A new root that does not say how it is keyed does not compile.

use std::collections::BTreeMap;

use minijinja::value::Value;
use promptstack_template::{self as template, Val};

use crate::context::{Fact, Scope, SendContext};
use crate::hash::{Key, KeyBuilder};
use crate::spec::{Stability, Trust, VariableSpec};
use crate::toolset::Toolset;

mod views;

pub(crate) use views::mcp_value;

/// The name of the root that holds the spec's variables, whose stability and trust the spec
/// declares per variable (so it is not a [`Root`]). The evaluators hold it apart in a context.
pub const VARIABLES: &str = template::VARIABLES;

/// One template root: a top-level name templates can read, with its fixed stability and trust.
///
/// `variables.<name>` is the one root not listed here: the spec declares each variable's
/// stability and trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Root {
    /// The moment of the send.
    Now,
    /// The model this send goes to.
    Model,
    /// The resolved toolset's spec tools.
    Tools,
    /// The application's integrations.
    Integrations,
    /// The application settings.
    Settings,
    /// The user's profile.
    User,
    /// The reply and application languages.
    Language,
    /// The thread's project.
    Project,
    /// The enabled skills.
    Skills,
    /// This send's message.
    UserMessage,
    /// The harness's working directory.
    Cwd,
    /// The context files.
    ContextFiles,
    /// Where the thread is persisted.
    MessagesPath,
    /// The browser tabs of this send.
    Tabs,
    /// The harness's state.
    HarnessState,
    /// This send's MCP servers.
    Mcp,
}

/// The names a render's context holds, by the index it keeps each root's place under
/// (`template::Context::of_roots`): every root's, in [`Root::ALL`]'s order, then `variables`.
pub(crate) const CONTEXT_NAMES: [&str; Root::ALL.len() + 1] = {
    let mut names = [VARIABLES; Root::ALL.len() + 1];
    let mut i = 0;
    while i < Root::ALL.len() {
        names[i] = Root::ALL[i].name();
        i += 1;
    }
    names
};

// Every name has an index a context can keep a place under.
const _: () = assert!(CONTEXT_NAMES.len() <= template::ROOT_INDICES);

/// The index of `variables` among [`CONTEXT_NAMES`].
pub(crate) const VARIABLES_INDEX: u8 = Root::ALL.len() as u8;

impl Root {
    /// The index of the root's name among [`CONTEXT_NAMES`].
    pub(crate) const fn index(self) -> u8 {
        self as u8
    }

    /// Every root, in the order templates enumerate them (stable roots keep their relative order,
    /// and so do volatile ones).
    pub const ALL: [Root; 16] = [
        Root::Now,
        Root::Model,
        Root::Tools,
        Root::Integrations,
        Root::Settings,
        Root::User,
        Root::Language,
        Root::Project,
        Root::Skills,
        Root::UserMessage,
        Root::Cwd,
        Root::ContextFiles,
        Root::MessagesPath,
        Root::Tabs,
        Root::HarnessState,
        Root::Mcp,
    ];

    /// The name templates use.
    pub const fn name(self) -> &'static str {
        match self {
            Root::Now => "now",
            Root::Model => "model",
            Root::Tools => "tools",
            Root::Integrations => "integrations",
            Root::Settings => "settings",
            Root::User => "user",
            Root::Language => "language",
            Root::Project => "project",
            Root::Skills => "skills",
            Root::UserMessage => "user_message",
            Root::Cwd => "cwd",
            Root::ContextFiles => "context_files",
            Root::MessagesPath => "messages_path",
            Root::Tabs => "tabs",
            Root::HarnessState => "harness_state",
            Root::Mcp => "mcp",
        }
    }

    /// Whether its value may change between the sends of a thread.
    pub const fn stability(self) -> Stability {
        match self {
            Root::Model
            | Root::Tools
            | Root::Integrations
            | Root::Settings
            | Root::User
            | Root::Language
            | Root::Project
            | Root::Skills
            | Root::Cwd
            | Root::ContextFiles
            | Root::MessagesPath => Stability::Stable,
            Root::Now | Root::UserMessage | Root::Tabs | Root::HarnessState | Root::Mcp => {
                Stability::Volatile
            }
        }
    }

    /// Who controls its value.
    pub const fn trust(self) -> Trust {
        match self {
            Root::Now
            | Root::Model
            | Root::Tools
            | Root::Integrations
            | Root::Cwd
            | Root::MessagesPath => Trust::Platform,
            Root::Settings
            | Root::User
            | Root::Language
            | Root::Project
            | Root::Skills
            | Root::UserMessage
            | Root::HarnessState => Trust::User,
            Root::ContextFiles | Root::Tabs | Root::Mcp => Trust::Untrusted,
        }
    }

    /// What it holds (Markdown, as in the roots table of `docs/spec.md`).
    pub const fn description(self) -> &'static str {
        match self {
            Root::Now => {
                "`rfc3339`, `date`, `time`, `minute`, `weekday`, `month`, `year`, `offset`, and `utc.*`"
            }
            Root::Model => {
                "`id`, `name`, `provider`, `tool_usage`, `can_use_tools`, `context_window`"
            }
            Root::Tools => {
                "the resolved toolset's spec tools by name: `'search' in tools`, `tools.search.description` (MCP tools are in `mcp`)"
            }
            Root::Integrations => {
                "by name: `connected`, `enabled`, `status` (`enabled`, `disabled`, `not_connected`); unknown names read as `not_connected`"
            }
            Root::Settings => "application settings by name",
            Root::User => {
                "`name`, `location.{name, latitude, longitude, coordinates}`, `units`, `language`, `app_language`"
            }
            Root::Language => "`reply` (the user's language, else the app's), `app`",
            Root::Project => {
                "`name`, `instructions`, `has_sibling_threads`; `none` outside a project"
            }
            Root::Skills => {
                "enabled skills visible to the model: `name`, `slug`, `description`, `instructions`, `tags`, `location`, `sites` (hidden skills never appear)"
            }
            Root::UserMessage => "`text`, `slugs` (the `/slug` tokens); `none` when absent",
            Root::Cwd => "the working directory the harness reports; `none` when absent",
            Root::ContextFiles => {
                "`[{path, content}]`, raw (the `context_files` filter caps, relativises them)"
            }
            Root::MessagesPath => "where the thread is persisted; `none` when it is not",
            Root::Tabs => {
                "`active` and `referenced` tabs (`id`, `url`, `title`, `host`), `urls` (active first)"
            }
            Root::HarnessState => "any JSON from the harness; `none` when absent",
            Root::Mcp => {
                "this send's MCP servers: `servers` (`name`, `ready`, `tools`, `reason`) and `tools` (offered MCP tool names)"
            }
        }
    }

    /// Looks a root up by the name templates use.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|root| root.name() == name)
    }

    /// The roots of one stability, in template order.
    pub(crate) fn of(stability: Stability) -> impl Iterator<Item = Self> {
        Self::ALL
            .into_iter()
            .filter(move |root| root.stability() == stability)
    }

    /// The root as the engine-free evaluators read it: borrowed from the send where the root is
    /// the send's own data (its [`Val::to_value`] is [`Root::value`]), else the template value.
    pub(crate) fn read<'a>(self, sources: &RootSources<'a>) -> Val<'a> {
        let ctx = sources.ctx;
        match self {
            Root::Skills => Val::Skills(&ctx.skills),
            // The root holds the local tools only; a toolset with MCP tools is read as a value.
            Root::Tools if sources.toolset.is_local() => Val::Tools(sources.toolset),
            Root::ContextFiles => Val::Files(&ctx.context_files),
            Root::Cwd => Val::text(ctx.cwd.as_deref()),
            Root::MessagesPath => Val::text(ctx.messages_path.as_deref()),
            Root::Now => Val::Now(&ctx.now),
            Root::Model
            | Root::Tools
            | Root::Integrations
            | Root::Settings
            | Root::User
            | Root::Language
            | Root::Project
            | Root::UserMessage
            | Root::Tabs
            | Root::HarnessState
            | Root::Mcp => Val::Value(self.value(sources)),
        }
    }

    /// Builds the root's template value for a send.
    pub(crate) fn value(self, sources: &RootSources<'_>) -> Value {
        let ctx = sources.ctx;
        match self {
            Root::Now => template::now_value(&ctx.now),
            Root::Model => views::model_value(&ctx.model),
            Root::Tools => sources.toolset.template_value(),
            Root::Integrations => views::integrations_value(&ctx.integrations),
            Root::Settings => template::json_map_value(&ctx.settings),
            Root::User => views::user_value(&ctx.user),
            Root::Language => views::language_value(&ctx.user),
            Root::Project => views::project_value(ctx.project.as_ref()),
            Root::Skills => template::skills_value(&ctx.skills),
            Root::UserMessage => views::user_message_value(ctx.user_message.as_deref()),
            Root::Cwd => template::to_value(ctx.cwd.as_deref()),
            Root::ContextFiles => template::to_value(&ctx.context_files),
            Root::MessagesPath => template::to_value(ctx.messages_path.as_deref()),
            Root::Tabs => views::tabs_value(&ctx.tabs),
            Root::HarnessState => template::json_value_or_none(ctx.harness_state.as_ref()),
            Root::Mcp => match &sources.mcp {
                Some((_, value)) => value.clone(),
                None => mcp_value(&ctx.mcp_servers, sources.toolset),
            },
        }
    }

    /// Adds the send facts the root's value is built from to a cache key.
    ///
    /// A root derived only from other roots adds nothing of its own: `tools` (the tool gates and
    /// requirements read the model, integrations, settings, skills, project and stable variables)
    /// and `language` (the user's profile). A root read from a [`Fact`] adds the fact's digest in
    /// its own scope, kept in the send after the first key; the small ones (the model, the user's
    /// profile, the integrations, the paths) add their values.
    pub(crate) fn add_to_key(self, sources: &RootSources<'_>, key: &mut KeyBuilder) {
        let ctx = sources.ctx;
        match self {
            Root::Now => {
                _ = key
                    .add(&ctx.now.timestamp().as_nanosecond())
                    .add(&ctx.now.offset().seconds())
            }
            Root::Model => _ = key.add(&ctx.model),
            Root::Tools | Root::Language => {}
            Root::Integrations => _ = key.add(&ctx.integrations),
            Root::Settings => ctx.settings.add_whole_to(Scope::SETTINGS, key),
            Root::User => _ = key.add(&ctx.user),
            Root::Project => ctx.project.add_whole_to(Scope::PROJECT, key),
            Root::Skills => ctx.skills.add_whole_to(Scope::SKILLS, key),
            Root::UserMessage => _ = key.add(&ctx.user_message),
            Root::Cwd => _ = key.add(&ctx.cwd),
            Root::ContextFiles => ctx.context_files.add_whole_to(Scope::CONTEXT_FILES, key),
            Root::MessagesPath => _ = key.add(&ctx.messages_path),
            Root::Tabs => _ = key.add(&ctx.tabs),
            Root::HarnessState => _ = key.add(&ctx.harness_state),
            Root::Mcp => {
                // The listings' key stands for the servers (and the tool capability) they hold.
                key.add(&sources.mcp.as_ref().map(|(listings, _)| *listings));
            }
        }
    }
}

/// The roots an agent's templates and gates can read, decided once when it is compiled.
///
/// A root that no template names cannot reach any output, so an assembly does not build its
/// value: a send pays only for the roots its agent uses. The names come from
/// [`TemplateSet::names`](promptstack_template::TemplateSet::names), an over-approximation (every
/// identifier inside a tag counts), and a template that calls `debug()`, which prints the whole context,
/// reads every root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadRoots {
    /// One bit per [`Root`], by its position in [`Root::ALL`].
    roots: u32,
    variables: bool,
}

impl ReadRoots {
    /// Every root and `variables`.
    const ALL: Self = Self {
        roots: (1 << Root::ALL.len()) - 1,
        variables: true,
    };

    /// No root at all.
    const NONE: Self = Self {
        roots: 0,
        variables: false,
    };

    /// The roots the templates and gates of a set can read.
    pub(crate) fn of(templates: &template::TemplateSet) -> Self {
        let mut read = Self::NONE;
        if templates.names(&mut |name| read.insert(name)) {
            read
        } else {
            Self::ALL
        }
    }

    /// The roots some of the templates and gates of a set can read, by their names: those they
    /// name themselves (a template cannot bring in another's text: the engine is built without
    /// `include`, `import` and `extends`, which a test holds), or, if one of them cannot be
    /// scanned, what every template of the set can read.
    pub(crate) fn of_some<'n>(
        templates: &template::TemplateSet,
        names: impl IntoIterator<Item = &'n str>,
    ) -> Self {
        let mut read = Self::NONE;
        for template in names {
            if !templates.names_in(template, &mut |name| read.insert(name)) {
                return Self::of(templates);
            }
        }
        read
    }

    /// Counts a name a template uses.
    fn insert(&mut self, name: &str) {
        if name == "debug" {
            *self = Self::ALL;
        } else if name == VARIABLES {
            self.variables = true;
        } else if let Some(root) = Root::from_name(name) {
            self.roots |= Self::bit(root);
        }
    }

    /// Whether some template can read this root.
    pub(crate) fn root(self, root: Root) -> bool {
        self.roots & Self::bit(root) != 0
    }

    /// Whether some template can read `variables`.
    pub(crate) fn variables(self) -> bool {
        self.variables
    }

    fn bit(root: Root) -> u32 {
        let index = Root::ALL
            .iter()
            .position(|r| *r == root)
            .unwrap_or_default();
        1 << index
    }
}

/// The spec's stable variables: the part of a send's `variables` its stable part reads.
///
/// Their digest covers each stable variable's name and sent value (absent differs from every
/// value; a default is the spec's, so it is not a send input), and nothing else, so a change to
/// a volatile variable leaves it, and the stable key, as they were. It is kept in the send's
/// `variables` fact in a scope that names these variables, so a send assembled for agents that
/// declare different stable variables is keyed right by each (only the first keeps its digest).
#[derive(Debug, Clone)]
pub(crate) struct StableVariables {
    names: Vec<String>,
    scope: Scope,
}

impl StableVariables {
    /// The stable variables among a spec's declarations, in name order.
    pub(crate) fn of(declared: &BTreeMap<String, VariableSpec>) -> Self {
        let names: Vec<String> = declared
            .iter()
            .filter(|(_, spec)| spec.stability == Stability::Stable)
            .map(|(name, _)| name.clone())
            .collect();
        let part = KeyBuilder::new("promptstack/send/stable-variables")
            .add(&names)
            .finish();
        Self {
            names,
            scope: Scope::projection(part),
        }
    }

    /// Whether a send sets any of the stable variables.
    pub(crate) fn any_set(&self, sent: &BTreeMap<String, serde_json::Value>) -> bool {
        !sent.is_empty() && self.names.iter().any(|name| sent.contains_key(name))
    }

    /// Adds the stable variables' values in a send to a key: by their digest, or by a mark
    /// when the send sets none of them (see [`Fact::add_to`]).
    pub(crate) fn add_to_key(
        &self,
        variables: &Fact<BTreeMap<String, serde_json::Value>>,
        key: &mut KeyBuilder,
    ) {
        variables.add_to(
            self.scope,
            key,
            |sent| !self.any_set(sent),
            |sent, key| {
                for name in &self.names {
                    key.add(name.as_str()).add(&sent.get(name));
                }
            },
        );
    }
}

/// What the roots of one send are built from.
pub(crate) struct RootSources<'a> {
    /// The send.
    pub ctx: &'a SendContext,
    /// The toolset `tools` shows: the spec's tools that are offered (MCP tools are in `mcp`).
    pub toolset: &'a Toolset,
    /// This send's resolved MCP listings, when it has servers: their key and the `mcp` value.
    pub mcp: Option<(Key, Value)>,
}

/// A volatile input a unit reads: a volatile root, one spec variable, or all of them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum VolatileInput {
    /// A volatile root.
    Root(Root),
    /// One spec variable, by name.
    Variable(String),
    /// `variables` as a whole (e.g. `variables[name]`).
    AllVariables,
}

impl VolatileInput {
    /// The volatile input a variable path reads, or `None` when the path is stable or unknown.
    pub(crate) fn of(path: &str) -> Option<Self> {
        let mut parts = path.split('.');
        let root = parts.next()?;
        if root == VARIABLES {
            return Some(match parts.next() {
                Some(name) => VolatileInput::Variable(name.to_owned()),
                None => VolatileInput::AllVariables,
            });
        }
        let root = Root::from_name(root)?;
        match root.stability() {
            Stability::Volatile => Some(VolatileInput::Root(root)),
            Stability::Stable => None,
        }
    }
}

/// The root a template path starts from (`user` for `user.name`).
pub(crate) fn root_of(path: &str) -> &str {
    path.split('.').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The roots table of `docs/spec.md`, generated from [`Root`] plus the declared
    /// `variables.<name>` row.
    fn roots_table() -> String {
        let mut table = String::from("| root | stability | trust | holds |\n|---|---|---|---|\n");
        for root in Root::ALL {
            table.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                root.name(),
                root.stability().as_str(),
                root.trust().as_str(),
                root.description()
            ));
        }
        table.push_str("| `variables.<name>` | declared | declared | spec variables (below) |\n");
        table
    }

    #[test]
    fn the_spec_document_lists_every_root() {
        let document = include_str!("../../../docs/spec.md");
        let table = roots_table();
        assert!(
            document.contains(&table),
            "the roots table in docs/spec.md differs from `Root`; replace it with:\n{table}"
        );
    }

    #[test]
    fn read_roots_are_the_names_inside_tags() {
        let read = |sources: &[&str]| {
            let mut templates = template::TemplateSet::new(template::Whitespace::default());
            for (i, source) in sources.iter().enumerate() {
                templates
                    .add(format!("t{i}"), (*source).to_owned())
                    .expect("compiles");
            }
            ReadRoots::of(&templates)
        };
        // An assignment from the root itself still reads it; text, strings and comments do not.
        let roots = read(&[
            "now and {% set skills = skills | list %}{{ \"user\" }}{# model #}",
            "{% raw %}{{ tabs }}{% endraw %}{% if cwd %}x{% endif %}",
        ]);
        assert!(roots.root(Root::Skills) && roots.root(Root::Cwd));
        for absent in [Root::Now, Root::User, Root::Model, Root::Tabs] {
            assert!(!roots.root(absent), "{absent:?}");
        }
        assert!(!roots.variables());
        assert!(read(&["{{ variables.x }}"]).variables());
        assert_eq!(read(&["{{ debug() }}"]), ReadRoots::ALL);
    }

    #[test]
    fn some_templates_read_their_own_roots_and_none_brings_in_another() {
        let mut templates = template::TemplateSet::new(template::Whitespace::default());
        for (name, source) in [
            ("stable", "{{ skills }}{{ variables.x }}"),
            ("date", "{{ now.date }}{{ cwd }}"),
        ] {
            templates
                .add(name.to_owned(), source.to_owned())
                .expect("compiles");
        }
        let date = ReadRoots::of_some(&templates, ["date"]);
        assert!(date.root(Root::Now) && date.root(Root::Cwd));
        assert!(!date.root(Root::Skills) && !date.variables());
        assert_eq!(ReadRoots::of_some(&templates, []), ReadRoots::NONE);
        // A name no template has is read as everything the set reads.
        assert_eq!(
            ReadRoots::of_some(&templates, ["missing"]),
            ReadRoots::of(&templates)
        );
        // What a template reads is what it names only because no template can bring in another's
        // text; if the engine ever could, `of_some` must count what the other reads.
        for source in [
            "{% include 'stable' %}",
            "{% import 'stable' as s %}",
            "{% from 'stable' import x %}",
            "{% extends 'stable' %}",
        ] {
            assert!(
                templates
                    .add("brings".to_owned(), source.to_owned())
                    .is_err(),
                "{source}"
            );
        }
    }

    #[test]
    fn a_root_s_index_is_its_name_s_place_among_the_context_names() {
        for (i, root) in Root::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(root.index()), i);
            assert_eq!(CONTEXT_NAMES[i], root.name());
        }
        assert_eq!(CONTEXT_NAMES[usize::from(VARIABLES_INDEX)], VARIABLES);
    }

    #[test]
    fn names_round_trip_and_volatile_inputs_are_volatile_roots() {
        for root in Root::ALL {
            assert_eq!(Root::from_name(root.name()), Some(root));
            let input = VolatileInput::of(&format!("{}.x", root.name()));
            match root.stability() {
                Stability::Volatile => assert_eq!(input, Some(VolatileInput::Root(root))),
                Stability::Stable => assert_eq!(input, None),
            }
        }
        assert_eq!(Root::from_name(VARIABLES), None);
        assert_eq!(
            VolatileInput::of("variables.mode"),
            Some(VolatileInput::Variable("mode".into()))
        );
        assert_eq!(
            VolatileInput::of("variables"),
            Some(VolatileInput::AllVariables)
        );
        assert_eq!(VolatileInput::of("nothing.here"), None);
    }
}
