//! The roots built from the send's records the template layer does not read itself: the
//! model, integrations, user, language, project, tabs, user message and MCP servers, each made
//! into a template value once per send (the layer reads skills, context files, the clock and
//! variables where they lie; see `template::Val`).

use std::collections::BTreeMap;
use std::sync::Arc;

use minijinja::value::Value;
use promptstack_template::to_value;
use serde::Serialize;

use crate::context::{
    Integration, ModelDescriptor, Project, Tab, Tabs, ToolUsage, UserProfile, message_slugs,
};
use crate::tools::mcp::{McpServerListing, McpServerStatus};
use crate::toolset::Toolset;

/// The `model` root.
pub(crate) fn model_value(model: &ModelDescriptor) -> Value {
    to_value(ModelView {
        id: &model.id,
        name: &model.name,
        provider: &model.provider,
        tool_usage: match model.tool_usage {
            ToolUsage::None => "none",
            ToolUsage::Native => "native",
        },
        can_use_tools: model.can_use_tools(),
        context_window: model.context_window,
    })
}

/// The `integrations` root: every name reads, unknown ones as `not_connected`.
pub(crate) fn integrations_value(integrations: &BTreeMap<String, Integration>) -> Value {
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
pub(crate) fn user_value(user: &UserProfile) -> Value {
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
pub(crate) fn language_value(user: &UserProfile) -> Value {
    to_value(&LanguageView {
        reply: user.reply_language(),
        app: user.app_language.as_deref(),
    })
}

/// The `project` root; `none` outside a project.
pub(crate) fn project_value(project: Option<&Project>) -> Value {
    let project = project.map(|p| ProjectView {
        name: &p.name,
        instructions: p.instructions.as_deref().filter(|i| !i.trim().is_empty()),
        has_sibling_threads: p.has_sibling_threads,
    });
    to_value(&project)
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
pub(crate) fn mcp_value(listings: &[McpServerListing], toolset: &Toolset) -> Value {
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
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
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

    fn enumerate(self: &Arc<Self>) -> minijinja::value::Enumerator {
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

/// The `tabs` root: the active tab, the referenced ones, and every URL (active first).
pub(crate) fn tabs_value(tabs: &Tabs) -> Value {
    let view = |t: &'_ Tab| TabView {
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
