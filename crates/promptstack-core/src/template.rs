//! Templates and gates: one minijinja environment per agent, strict about undefined values.
//!
//! Block texts are Jinja templates; gates (`when`) are Jinja expressions compiled as tiny templates
//! so they share the environment, the filters and the static analysis. Rendering counts every
//! emitted value that came out empty (`none`, `""`), so the assembler can warn about it; `none`
//! renders as nothing rather than the word "none".

use std::collections::{BTreeMap, HashSet};

use minijinja::value::Value;
use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::context::{Now, format_offset, message_slugs};
use crate::spec::RenderOptions;
use crate::toolset::Toolset;

std::thread_local! {
    /// Empty emissions of the render running on this thread. Renders do not nest, so one counter
    /// per thread is enough; it is reset before and read after each render.
    static EMPTY_EMISSIONS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A bound on the work one render may do, so that a runaway template fails instead of hanging.
const FUEL: u64 = 5_000_000;

/// The compiled templates and gates of one agent.
pub(crate) struct TemplateSet {
    env: Environment<'static>,
}

/// A rendered template and how many of its emitted values were empty.
pub(crate) struct Rendered {
    pub text: String,
    pub empty_emissions: u32,
}

impl TemplateSet {
    pub fn new(options: &RenderOptions) -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_fuel(Some(FUEL));
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(options.trim_blocks)
            .lstrip_blocks(options.lstrip_blocks)
            .keep_trailing_newline(true)
            .build()
            .unwrap_or_default();
        env.set_syntax(syntax);
        // `contains`: whether a sequence holds an item (or a string a substring), for filters such as
        // `skills | selectattr('tags', 'contains', 'widget')`.
        env.add_test("contains", |container: Value, item: Value| -> bool {
            match (container.as_str(), item.as_str()) {
                (Some(haystack), Some(needle)) => haystack.contains(needle),
                _ => container
                    .try_iter()
                    .map(|mut items| items.any(|v| v == item))
                    .unwrap_or(false),
            }
        });
        crate::layers::register(&mut env);
        env.set_formatter(|out, state, value| {
            let empty = value.is_none()
                || value.is_undefined()
                || value.as_str().is_some_and(str::is_empty);
            if empty {
                EMPTY_EMISSIONS.with(|n| n.set(n.get().saturating_add(1)));
                if value.is_none() {
                    return Ok(());
                }
            }
            minijinja::escape_formatter(out, state, value)
        });
        Self { env }
    }

    /// Adds a template.
    pub fn add(&mut self, name: String, source: String) -> Result<(), minijinja::Error> {
        self.env.add_template_owned(name, source)
    }

    /// Adds a gate expression, checking first that it is exactly one expression.
    ///
    /// The gate is stored as the template `{% if (EXPR) %}1{% endif %}`; the length of
    /// `GATE_PREFIX` is the offset of the expression in that text, for mapping error positions back.
    pub fn add_gate(&mut self, name: String, expression: &str) -> Result<(), minijinja::Error> {
        self.env.compile_expression(expression)?;
        self.env
            .add_template_owned(name, format!("{GATE_PREFIX}{expression}{GATE_SUFFIX}"))
    }

    /// The variable paths a template reads, e.g. `user.name`, `tools`, `variables.voice_mode`.
    pub fn variables(&self, name: &str) -> HashSet<String> {
        self.env
            .get_template(name)
            .map(|t| t.undeclared_variables(true))
            .unwrap_or_default()
    }

    /// Renders a template against the context.
    pub fn render(&self, name: &str, ctx: &Value) -> Result<Rendered, minijinja::Error> {
        let template = self.env.get_template(name)?;
        EMPTY_EMISSIONS.with(|n| n.set(0));
        let text = template.render(ctx.clone())?;
        Ok(Rendered {
            text,
            empty_emissions: EMPTY_EMISSIONS.with(|n| n.get()),
        })
    }

    /// Evaluates a gate against the context.
    pub fn gate(&self, name: &str, ctx: &Value) -> Result<bool, minijinja::Error> {
        Ok(self.env.get_template(name)?.render(ctx.clone())? == "1")
    }
}

pub(crate) const GATE_PREFIX: &str = "{% if (";
const GATE_SUFFIX: &str = ") %}1{% endif %}";

/// Whether the value at a dotted path is empty (none, undefined, `""`, or an empty sequence).
pub(crate) fn path_is_empty(ctx: &Value, path: &str) -> bool {
    let mut value = ctx.clone();
    for part in path.split('.') {
        value = match value.get_attr(part) {
            Ok(v) => v,
            Err(_) => return true,
        };
    }
    value.is_none()
        || value.is_undefined()
        || value.as_str().is_some_and(str::is_empty)
        || value.len() == Some(0)
}

/// The `model` root.
pub(crate) fn model_value(model: &crate::context::ModelDescriptor) -> Value {
    to_value(ModelView {
        id: &model.id,
        name: &model.name,
        provider: &model.provider,
        tool_usage: match model.tool_usage {
            crate::context::ToolUsage::None => "none",
            crate::context::ToolUsage::Native => "native",
        },
        can_use_tools: model.can_use_tools(),
        context_window: model.context_window,
    })
}

/// The `integrations` root: every name reads, unknown ones as `not_connected`.
pub(crate) fn integrations_value(
    integrations: &BTreeMap<String, crate::context::Integration>,
) -> Value {
    Value::from_object(Integrations(
        integrations
            .iter()
            .map(|(name, i)| {
                let view = IntegrationView {
                    connected: i.connected,
                    enabled: i.enabled,
                    status: i.status(),
                };
                (name.clone(), to_value(view))
            })
            .collect(),
    ))
}

/// The `user` root.
pub(crate) fn user_value(user: &crate::context::UserProfile) -> Value {
    let location = user.location.as_ref().map(|l| LocationView {
        name: l.name.as_deref(),
        latitude: l.latitude,
        longitude: l.longitude,
        coordinates: l.coordinates(),
    });
    to_value(&UserView {
        name: user.name.as_deref(),
        location,
        units: user.units.as_deref(),
        language: user.language.as_deref(),
        app_language: user.app_language.as_deref(),
    })
}

/// The `language` root, derived from the user's profile.
pub(crate) fn language_value(user: &crate::context::UserProfile) -> Value {
    to_value(&LanguageView {
        reply: user.reply_language(),
        app: user.app_language.as_deref(),
    })
}

/// The `project` root; `none` outside a project.
pub(crate) fn project_value(project: Option<&crate::context::Project>) -> Value {
    let project = project.map(|p| ProjectView {
        name: &p.name,
        instructions: p.instructions.as_deref().filter(|i| !i.trim().is_empty()),
        has_sibling_threads: p.has_sibling_threads,
    });
    to_value(&project)
}

/// The `skills` root.
pub(crate) fn skills_value(skills: &[crate::context::Skill]) -> Value {
    // Hidden skills never reach a template, so no spec can leak them by accident.
    let skills: Vec<SkillView> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .map(|s| SkillView {
            name: &s.name,
            slug: s.slug(),
            description: &s.description,
            instructions: &s.instructions,
            tags: &s.tags,
            location: s.location.as_deref(),
            sites: &s.sites,
        })
        .collect();
    to_value(&skills)
}

/// The `now` root: fields are formatted on access, so a template pays only for what it reads.
pub(crate) fn now_value(now: &Now) -> Value {
    Value::from_object(NowObject {
        now: *now,
        utc: false,
    })
}

/// `now` (the user's wall clock) or `now.utc`.
#[derive(Debug)]
struct NowObject {
    now: Now,
    utc: bool,
}

impl NowObject {
    const LOCAL_FIELDS: &'static [&'static str] = &[
        "rfc3339", "date", "time", "minute", "weekday", "month", "year", "offset", "utc",
    ];
    const UTC_FIELDS: &'static [&'static str] = &[
        "rfc3339", "date", "time", "minute", "weekday", "month", "year",
    ];
}

impl minijinja::value::Object for NowObject {
    fn get_value(self: &std::sync::Arc<Self>, key: &Value) -> Option<Value> {
        let civil = if self.utc {
            self.now.utc()
        } else {
            self.now.local()
        };
        let text = |format: &str| Some(Value::from(civil.strftime(format).to_string()));
        match key.as_str()? {
            "rfc3339" if self.utc => Some(Value::from(
                self.now
                    .timestamp()
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
                    .to_string(),
            )),
            "rfc3339" => Some(Value::from(self.now.to_string())),
            "date" => text("%Y-%m-%d"),
            "time" => text("%H:%M"),
            "minute" => text("%Y-%m-%d %H:%M"),
            "weekday" => text("%A"),
            "month" => text("%B"),
            "year" => Some(Value::from(civil.year())),
            "offset" if !self.utc => Some(Value::from(format_offset(self.now.offset()))),
            "utc" if !self.utc => Some(Value::from_object(NowObject {
                now: self.now,
                utc: true,
            })),
            _ => None,
        }
    }

    fn enumerate(self: &std::sync::Arc<Self>) -> minijinja::value::Enumerator {
        minijinja::value::Enumerator::Str(if self.utc {
            Self::UTC_FIELDS
        } else {
            Self::LOCAL_FIELDS
        })
    }
}

/// The `user_message` root.
pub(crate) fn user_message_value(message: Option<&str>) -> Value {
    match message {
        Some(text) => to_value(&UserMessageView {
            text,
            slugs: message_slugs(text),
        }),
        None => Value::from(()),
    }
}

/// The `mcp` root: this send's servers sorted by name (`name`, `ready`, `tools` as
/// `{name, tool, description}` under their namespaced names, `reason` when not ready) and `tools`,
/// the namespaced names of every MCP tool offered.
pub(crate) fn mcp_value(
    listings: &[crate::tools::mcp::McpServerListing],
    toolset: &Toolset,
) -> Value {
    use crate::tools::mcp::McpServerStatus;
    let mut servers: Vec<McpServerView<'_>> = listings
        .iter()
        .map(|listing| match &listing.status {
            McpServerStatus::Ready { tools } => {
                let mut views: Vec<McpToolView<'_>> = tools
                    .iter()
                    .filter_map(|tool| {
                        let name = toolset.mcp_names().name_of(&listing.server, &tool.name)?;
                        Some(McpToolView {
                            name,
                            tool: &tool.name,
                            description: tool.description.as_deref(),
                        })
                    })
                    .collect();
                views.sort_by(|a, b| a.name.cmp(b.name));
                views.dedup_by(|a, b| a.name == b.name);
                McpServerView {
                    name: &listing.server,
                    ready: true,
                    tools: views,
                    reason: None,
                }
            }
            McpServerStatus::Failed { failure } => McpServerView {
                name: &listing.server,
                ready: false,
                tools: Vec::new(),
                reason: Some(&failure.message),
            },
        })
        .collect();
    servers.sort_by(|a, b| a.name.cmp(b.name));
    servers.dedup_by(|a, b| a.name == b.name);
    let tools: Vec<&str> = toolset
        .tools()
        .iter()
        .filter(|t| !t.origin.is_local())
        .map(|t| t.name.as_str())
        .collect();
    to_value(McpView { servers, tools })
}

#[derive(Serialize)]
struct McpView<'a> {
    servers: Vec<McpServerView<'a>>,
    tools: Vec<&'a str>,
}

#[derive(Serialize)]
struct McpServerView<'a> {
    name: &'a str,
    ready: bool,
    tools: Vec<McpToolView<'a>>,
    reason: Option<&'a str>,
}

#[derive(Serialize)]
struct McpToolView<'a> {
    name: &'a str,
    tool: &'a str,
    description: Option<&'a str>,
}

/// Joins roots into the context value templates render against.
pub(crate) fn context_value(roots: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
    Value::from_object(Roots(roots.into_iter().collect()))
}

/// The context templates render against: a dozen named roots, looked up by a linear scan (cheaper
/// than building a map for every send).
#[derive(Debug)]
struct Roots(Vec<(&'static str, Value)>);

impl minijinja::value::Object for Roots {
    fn get_value(self: &std::sync::Arc<Self>, key: &Value) -> Option<Value> {
        let key = key.as_str()?;
        self.0
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| value.clone())
    }

    fn enumerate(self: &std::sync::Arc<Self>) -> minijinja::value::Enumerator {
        minijinja::value::Enumerator::Values(
            self.0.iter().map(|(name, _)| Value::from(*name)).collect(),
        )
    }
}

#[derive(Serialize)]
struct ModelView<'a> {
    id: &'a str,
    name: &'a str,
    provider: &'a str,
    tool_usage: &'static str,
    can_use_tools: bool,
    context_window: Option<u32>,
}

/// The `integrations` root: every name is defined, and names the send does not mention read as
/// `not_connected`, so `integrations.google.status == 'enabled'` never fails on an absent entry.
#[derive(Debug)]
struct Integrations(BTreeMap<String, Value>);

impl minijinja::value::Object for Integrations {
    fn get_value(self: &std::sync::Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        static NOT_CONNECTED: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
            to_value(IntegrationView {
                connected: false,
                enabled: false,
                status: "not_connected",
            })
        });
        Some(
            self.0
                .get(name)
                .cloned()
                .unwrap_or_else(|| NOT_CONNECTED.clone()),
        )
    }

    fn enumerate(self: &std::sync::Arc<Self>) -> minijinja::value::Enumerator {
        minijinja::value::Enumerator::Values(
            self.0.keys().map(|k| Value::from(k.as_str())).collect(),
        )
    }
}

#[derive(Serialize)]
struct IntegrationView {
    connected: bool,
    enabled: bool,
    status: &'static str,
}

#[derive(Serialize)]
struct LocationView<'a> {
    name: Option<&'a str>,
    latitude: Option<f64>,
    longitude: Option<f64>,
    coordinates: Option<String>,
}

#[derive(Serialize)]
struct UserView<'a> {
    name: Option<&'a str>,
    location: Option<LocationView<'a>>,
    units: Option<&'a str>,
    language: Option<&'a str>,
    app_language: Option<&'a str>,
}

#[derive(Serialize)]
struct LanguageView<'a> {
    reply: Option<&'a str>,
    app: Option<&'a str>,
}

#[derive(Serialize)]
struct ProjectView<'a> {
    name: &'a str,
    instructions: Option<&'a str>,
    has_sibling_threads: bool,
}

#[derive(Serialize)]
struct SkillView<'a> {
    name: &'a str,
    slug: &'a str,
    description: &'a str,
    instructions: &'a str,
    tags: &'a [String],
    location: Option<&'a str>,
    sites: &'a [String],
}

/// The `tabs` root: the active tab, the referenced ones, and every URL (active first).
pub(crate) fn tabs_value(tabs: &crate::context::Tabs) -> Value {
    let view = |t: &'_ crate::context::Tab| TabView {
        id: t.id,
        url: t.url.clone(),
        title: t.title.clone(),
        host: url::Url::parse(&t.url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned)),
    };
    to_value(TabsView {
        active: tabs.active.as_ref().map(view),
        referenced: tabs.referenced.iter().map(view).collect(),
        urls: tabs.all().map(|t| t.url.as_str()).collect(),
    })
}

#[derive(Serialize)]
struct TabView {
    id: i64,
    url: String,
    title: Option<String>,
    host: Option<String>,
}

#[derive(Serialize)]
struct TabsView<'a> {
    active: Option<TabView>,
    referenced: Vec<TabView>,
    urls: Vec<&'a str>,
}

#[derive(Serialize)]
struct UserMessageView<'a> {
    text: &'a str,
    slugs: Vec<&'a str>,
}

/// Converts any serialisable value into a template value.
pub(crate) fn to_value<T: Serialize>(value: T) -> Value {
    Value::from(minijinja::value::Serde(value))
}
