//! [`SendContext`], in a module of its own so that the crate root is its only public path (the
//! rest of [`context`](super) is public through that module).

use super::*;

/// The facts of one send.
///
/// Read one from JSON with [`SendContext::from_json`], or build one from the two required facts
/// with [`SendContext::new`] and the `with_*` setters. The struct is `#[non_exhaustive]`: new
/// facts can be added without breaking callers. There is no `Default`, because no moment and no
/// model are sensible defaults.
///
/// The facts that can be large (settings, project, skills, variables, context files, and a
/// stage's tenant instructions and overrides) are each a [`Fact`]: read and written as the plain
/// value, and keeping the digest the stable key reads, so a thread's send kept and sent again is
/// keyed without hashing them again (changing one drops its digest).
///
/// ```
/// use promptstack_core::SendContext;
/// use promptstack_core::context::{ModelDescriptor, UserProfile};
///
/// let model = ModelDescriptor::new("gpt-4o", "GPT-4o", "openai");
/// let ctx = SendContext::new("2026-11-30T09:15:00+01:00".parse().unwrap(), model)
///     .with_user(UserProfile { name: Some("Ada".into()), ..UserProfile::default() })
///     .with_user_message("Hello!");
/// assert_eq!(ctx.user_message.as_deref(), Some("Hello!"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "promptstack send context",
    description = "The facts of one send."
)]
#[non_exhaustive]
pub struct SendContext {
    /// The moment of the send, RFC 3339 with an offset (`2026-11-30T09:15:00+01:00`). The offset
    /// decides the local date and time shown to the model.
    pub now: Now,
    /// The model this send goes to.
    pub model: ModelDescriptor,
    /// Application settings, by name (values of any JSON type).
    #[serde(default)]
    pub settings: Fact<BTreeMap<String, serde_json::Value>>,
    /// Integrations, by name: whether each is connected and whether it is switched on.
    #[serde(default)]
    pub integrations: BTreeMap<String, Integration>,
    /// What the user told the application about themselves.
    #[serde(default)]
    pub user: UserProfile,
    /// The project the thread belongs to, if any.
    #[serde(default, skip_serializing_if = "is_none")]
    pub project: Fact<Option<Project>>,
    /// The skills enabled for this user.
    #[serde(default)]
    pub skills: Fact<Vec<Skill>>,
    /// The text of the user's message for this send (`/slug` tokens in it select skills and intents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_message: Option<String>,
    /// Values for the variables the spec declares, by name.
    #[serde(default)]
    pub variables: Fact<BTreeMap<String, serde_json::Value>>,
    /// A coding agent's working directory, as the harness reports it (any separator style).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Context files (AGENTS.md, CLAUDE.md…) in the order they apply: the agent's own directory
    /// first, then each directory from the root down to the working directory.
    #[serde(default, skip_serializing_if = "is_empty")]
    pub context_files: Fact<Vec<ContextFile>>,
    /// Where the thread's messages are persisted, if anywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_path: Option<String>,
    /// The harness's own state (task list, subagents, open work), any JSON; shown compactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_state: Option<serde_json::Value>,
    /// A browser agent's tabs: the one active when the user submitted, and the ones they referenced.
    #[serde(default, skip_serializing_if = "Tabs::is_empty")]
    pub tabs: Tabs,
    /// What MCP discovery found on each configured server for this send: its tools, or why it
    /// could not be used. The tools join the toolset under namespaced names; the servers are the
    /// volatile `mcp` root, so a server going up or down never changes the stable half.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<crate::tools::mcp::McpServerListing>,
    /// The active subagent topic of a stage; absent means the main prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    /// The tenant's instructions, as a tenant-instructions source resolved them for this send.
    #[serde(default, skip_serializing_if = "is_none")]
    pub tenant_instructions: Fact<Option<TenantInstructions>>,
    /// The stage's stored overrides of the injected blocks (same shape as the spec's
    /// `[auto_injections]`); when present they replace the spec's.
    #[serde(default, skip_serializing_if = "is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub auto_injections: Fact<Option<serde_json::Value>>,
}

impl SendContext {
    /// A send with the two required facts, the moment and the model; everything else empty.
    pub fn new(now: Now, model: ModelDescriptor) -> Self {
        Self {
            now,
            model,
            settings: Fact::default(),
            integrations: BTreeMap::new(),
            user: UserProfile::default(),
            project: Fact::default(),
            skills: Fact::default(),
            user_message: None,
            variables: Fact::default(),
            cwd: None,
            context_files: Fact::default(),
            messages_path: None,
            harness_state: None,
            tabs: Tabs::default(),
            mcp_servers: Vec::new(),
            topic: None,
            tenant_instructions: Fact::default(),
            auto_injections: Fact::default(),
        }
    }

    /// Sets the application settings, by name.
    pub fn with_settings(mut self, settings: BTreeMap<String, serde_json::Value>) -> Self {
        self.settings = settings.into();
        self
    }

    /// Sets the integrations, by name.
    pub fn with_integrations(mut self, integrations: BTreeMap<String, Integration>) -> Self {
        self.integrations = integrations;
        self
    }

    /// Sets what the user told the application about themselves.
    pub fn with_user(mut self, user: UserProfile) -> Self {
        self.user = user;
        self
    }

    /// Sets the project the thread belongs to.
    pub fn with_project(mut self, project: Project) -> Self {
        self.project = Some(project).into();
        self
    }

    /// Sets the skills enabled for this user.
    pub fn with_skills(mut self, skills: Vec<Skill>) -> Self {
        self.skills = skills.into();
        self
    }

    /// Sets the text of the user's message for this send.
    pub fn with_user_message(mut self, user_message: impl Into<String>) -> Self {
        self.user_message = Some(user_message.into());
        self
    }

    /// Sets the values of the spec's variables, by name.
    pub fn with_variables(mut self, variables: BTreeMap<String, serde_json::Value>) -> Self {
        self.variables = variables.into();
        self
    }

    /// Sets the coding agent's working directory.
    pub fn with_cwd(mut self, cwd: impl Into<String>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets the context files, in the order they apply.
    pub fn with_context_files(mut self, context_files: Vec<ContextFile>) -> Self {
        self.context_files = context_files.into();
        self
    }

    /// Sets where the thread's messages are persisted.
    pub fn with_messages_path(mut self, messages_path: impl Into<String>) -> Self {
        self.messages_path = Some(messages_path.into());
        self
    }

    /// Sets the harness's own state.
    pub fn with_harness_state(mut self, harness_state: serde_json::Value) -> Self {
        self.harness_state = Some(harness_state);
        self
    }

    /// Sets the browser tabs of this send.
    pub fn with_tabs(mut self, tabs: Tabs) -> Self {
        self.tabs = tabs;
        self
    }

    /// Sets what MCP discovery found on each configured server.
    pub fn with_mcp_servers(
        mut self,
        mcp_servers: Vec<crate::tools::mcp::McpServerListing>,
    ) -> Self {
        self.mcp_servers = mcp_servers;
        self
    }

    /// Sets the active subagent topic of a stage.
    pub fn with_topic(mut self, topic: impl Into<String>) -> Self {
        self.topic = Some(topic.into());
        self
    }

    /// Sets the tenant's instructions for this send.
    pub fn with_tenant_instructions(mut self, tenant_instructions: TenantInstructions) -> Self {
        self.tenant_instructions = Some(tenant_instructions).into();
        self
    }

    /// Sets the stage's stored overrides of the injected blocks.
    pub fn with_auto_injections(mut self, auto_injections: serde_json::Value) -> Self {
        self.auto_injections = Some(auto_injections).into();
        self
    }
}

impl SendContext {
    /// Parses a send context from JSON bytes, reporting every problem with its location.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] (the same located diagnostics as specs use) for non-UTF-8 input, syntax
    /// errors, unknown keys, wrong types, and values such as a `now` without an offset.
    pub fn from_json(bytes: &[u8], name: &str) -> Result<Self, SpecError> {
        Self::read(bytes, name, None)
    }

    /// Reads a send context for an agent spec: as [`SendContext::from_json`], and every variable
    /// the spec declares with a [`Shape`](crate::spec::Shape) must have that shape. A value that
    /// does not fit is a `bad-shape` error located at the value (or at the part of it that does
    /// not fit), with its key path.
    ///
    /// # Errors
    ///
    /// As [`SendContext::from_json`], and `bad-shape`.
    pub fn from_json_for(
        bytes: &[u8],
        name: &str,
        spec: &crate::AgentSpec,
    ) -> Result<Self, SpecError> {
        Self::read(bytes, name, Some(spec))
    }

    /// Reads a send held as values in memory (a host language's dicts and lists) for an agent
    /// spec, without writing it as JSON text: `deserialize` reads the tree through serde (the
    /// host's own deserialiser), and the tree is checked as the text reader checks a text (size,
    /// nesting, the schema's types and bounds, site patterns, the spec's shapes).
    ///
    /// `None` when the located reader would refuse the tree's JSON text, or when this cannot be
    /// decided here: write the tree as JSON (`serde_json::to_vec_pretty`) and read it with
    /// [`SendContext::from_json_for`], which reads the same sends to the same value and locates
    /// every problem. The size limit is checked against an upper bound of that text's length,
    /// so a send close to the limit is left to the text.
    pub fn from_tree_for<T: SendTree>(
        tree: &T,
        deserialize: impl FnOnce(&T) -> Option<Self>,
        spec: Option<&crate::AgentSpec>,
    ) -> Option<Self> {
        if !fast::tree_fits(tree) {
            return None;
        }
        let context = deserialize(tree)?;
        fast::context_fits(&context, spec).then_some(context)
    }

    /// The fast reader when it can decide, else the located one: the same sends accepted, read
    /// to the same value, and every refusal located.
    pub(super) fn read(
        bytes: &[u8],
        name: &str,
        spec: Option<&crate::AgentSpec>,
    ) -> Result<Self, SpecError> {
        // Declined (refused, or not decidable without the tree): the located reader reads it.
        fast::read(bytes, spec).or_else(|_| Self::read_located(bytes, name, spec))
    }

    /// Reads a send through its tree, its span index and its schema, locating every problem.
    pub(super) fn read_located(
        bytes: &[u8],
        name: &str,
        spec: Option<&crate::AgentSpec>,
    ) -> Result<Self, SpecError> {
        let (tree, source, spans) = parse_tree(bytes, name, SpecFormat::Json, MAX_SEND_BYTES)
            .map_err(|e| e.about("send context"))?;
        let locator = Locator {
            source: &source,
            spans: &spans,
        };
        let mut diagnostics: Vec<SpecDiagnostic> =
            schema_diagnostics(&tree, &SEND_SCHEMA, SEND_VALIDATOR.as_ref(), &locator);
        // The schema cannot check the content of `now`; serde can, and names the path.
        if diagnostics.is_empty() {
            match serde_path_to_error::deserialize::<_, SendContext>(&tree) {
                Ok(context) => {
                    for (i, skill) in context.skills.iter().enumerate() {
                        for (j, pattern) in skill.sites.iter().enumerate() {
                            if let Err(error) = crate::sites::SitePattern::parse(pattern) {
                                diagnostics.push(locator.at(
                                    "bad-site-pattern",
                                    &format!("/skills/{i}/sites/{j}"),
                                    false,
                                    error.to_string(),
                                    Some("write a host (`docs.example.com`), `*.example.com` for a domain and its subdomains, or `*` for every site".into()),
                                ));
                            }
                        }
                    }
                    if let Some(spec) = spec {
                        for (name, value) in &context.variables {
                            let Some(declared) = spec.variables.get(name) else {
                                continue;
                            };
                            if let Some(diagnostic) =
                                shape_misfit(declared, name, value, "/variables", &locator)
                            {
                                diagnostics.push(diagnostic);
                            }
                        }
                    }
                    if diagnostics.is_empty() {
                        return Ok(context);
                    }
                }
                Err(error) => {
                    let pointer = path_to_pointer(error.path());
                    let message = lowercase_first(&error.inner().to_string());
                    diagnostics.push(locator.at("bad-value", &pointer, false, message, None));
                }
            }
        }
        Err(SpecError::new(diagnostics).about("send context"))
    }

    /// Drops the digests the send's facts keep (see [`Fact`]), as if the send had just been
    /// read: the next assembly hashes its stable inputs again. Nothing needs this for
    /// correctness (a digest never goes stale); a benchmark of a thread's first send does, to
    /// time the hashing a send just read pays.
    pub fn forget_digests(&mut self) {
        // Every field is named, so a fact added to the send cannot be missed here.
        let SendContext {
            now: _,
            model: _,
            settings,
            integrations: _,
            user: _,
            project,
            skills,
            user_message: _,
            variables,
            cwd: _,
            context_files,
            messages_path: _,
            harness_state: _,
            tabs: _,
            mcp_servers: _,
            topic: _,
            tenant_instructions,
            auto_injections,
        } = self;
        settings.forget_digest();
        project.forget_digest();
        skills.forget_digest();
        variables.forget_digest();
        context_files.forget_digest();
        tenant_instructions.forget_digest();
        auto_injections.forget_digest();
    }

    /// The JSON Schema of the send context.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(SendContext)).unwrap_or_default()
    }
}

/// Whether an optional fact is absent (it is then left out of the JSON).
fn is_none<T>(fact: &Fact<Option<T>>) -> bool {
    fact.is_none()
}

/// Whether a list fact is empty (it is then left out of the JSON).
fn is_empty<T>(fact: &Fact<Vec<T>>) -> bool {
    fact.is_empty()
}

pub(super) static SEND_SCHEMA: std::sync::LazyLock<serde_json::Value> =
    std::sync::LazyLock::new(SendContext::json_schema);
static SEND_VALIDATOR: std::sync::LazyLock<Option<jsonschema::Validator>> =
    std::sync::LazyLock::new(|| jsonschema::validator_for(&SEND_SCHEMA).ok());
