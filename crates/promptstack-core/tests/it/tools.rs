//! Tool descriptors, the registry, availability from declared requirements, and canonical order.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;

use promptstack_core::context::{Integration, ModelDescriptor, Project, Skill, ToolUsage};
use promptstack_core::spec::ToolSpec;
use promptstack_core::spec::parse;
use promptstack_core::tools::registration::{
    RegistrationErrorKind, ToolRegistry, descriptor_problems,
};
use promptstack_core::toolset::Tool;
use promptstack_core::{Agent, Assembly, SendContext, SpecFormat};
use proptest::prelude::*;
use serde_json::json;

/// The tool `name` the assembly offers.
fn offered<'a>(assembly: &'a Assembly, name: &str) -> &'a Tool {
    let tools = assembly.toolset().tools();
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is offered"))
}

/// The MCP servers the assembly's toolset skipped, in order.
fn skipped_servers(assembly: &Assembly) -> Vec<&str> {
    let skipped = assembly.toolset().skipped_servers();
    skipped.iter().map(|s| s.server.as_str()).collect()
}

fn descriptor(name: &str) -> ToolSpec {
    serde_json::from_value(json!({
        "name": name,
        "description": "Look something up. Use it when asked. If it fails, say so.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        "verb": "looking up {query}",
        "cacheable": true,
        "read_only": true
    }))
    .unwrap()
}

fn codes(tool: &ToolSpec) -> Vec<&'static str> {
    descriptor_problems(tool).iter().map(|p| p.code).collect()
}

#[test]
fn descriptors_are_checked_field_by_field() {
    assert!(codes(&descriptor("lookup")).is_empty());

    let mut tool = descriptor("look up");
    tool.description = "  ".into();
    tool.cacheable = true;
    tool.read_only = false;
    tool.verb = Some("looking up {what}".into());
    tool.parameters = json!({"type": "object", "properties": {"query": {"type": 12}}});
    assert_eq!(
        codes(&tool),
        [
            "bad-tool-name",
            "incomplete-tool",
            "bad-tool-parameters",
            "cacheable-not-read-only"
        ]
    );

    // Once the schema is valid, the names it uses are checked too.
    tool.parameters = json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["limit"]});
    assert_eq!(
        codes(&tool),
        [
            "bad-tool-name",
            "incomplete-tool",
            "bad-tool-parameters",
            "bad-tool-verb",
            "cacheable-not-read-only"
        ]
    );

    // A composed schema may declare its properties elsewhere: its names are not second-guessed.
    let mut composed = descriptor("composed");
    composed.parameters =
        json!({"type": "object", "allOf": [{"properties": {"q": {"type": "string"}}}]});
    composed.verb = Some("looking up {q}".into());
    assert!(codes(&composed).is_empty());

    let mut array = descriptor("array");
    array.parameters = json!({"type": "array"});
    assert_eq!(codes(&array), ["bad-tool-parameters"]);
}

#[test]
fn the_registry_refuses_conflicts_and_invalid_descriptors() {
    let mut registry = ToolRegistry::new();
    registry
        .register(descriptor("b_tool"))
        .unwrap()
        .register(descriptor("a_tool"))
        .unwrap();
    let conflict = registry.register(descriptor("a_tool")).unwrap_err();
    assert_eq!(conflict.kind(), &RegistrationErrorKind::Conflict);
    assert_eq!(
        conflict.to_string(),
        "tool `a_tool` is already registered; tool names must be unique"
    );

    let mut incomplete = descriptor("c_tool");
    incomplete.description = String::new();
    incomplete.read_only = false;
    let error = registry.register(incomplete).unwrap_err();
    let RegistrationErrorKind::Invalid(problems) = error.kind() else {
        panic!("{error}");
    };
    assert_eq!(problems.len(), 2);
    insta::assert_snapshot!(error.to_string(), @r"
    tool `c_tool` was refused:
    - incomplete-tool (`description`): tool `c_tool` has an empty description; say what the tool does, when to use it, and what to do after a failure
    - cacheable-not-read-only (`cacheable`): tool `c_tool` is cacheable but not declared read-only; identical calls would share one execution of a tool that changes something; add `read_only = true` if the tool only reads, or remove `cacheable`
    ");

    // Nothing was registered by the refused calls, and tools come back by name.
    let names: Vec<&str> = registry.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a_tool", "b_tool"]);
}

const BASE: &str = include_str!("../data/specs/tools.toml");

#[test]
fn registered_tools_compile_with_the_spec_and_may_not_shadow_it() {
    let mut registry = ToolRegistry::new();
    registry.register(descriptor("order_status")).unwrap();
    let parsed = parse(BASE.as_bytes(), "tools.toml", SpecFormat::Toml).unwrap();
    let agent = Agent::compile(parsed.with_tools(registry)).unwrap();
    let assembly = agent.assemble(&send(BTreeMap::new())).unwrap();
    assert_eq!(assembly.stable(), "Tools: lookup, order_status.");

    let mut registry = ToolRegistry::new();
    registry.register(descriptor("lookup")).unwrap();
    let parsed = parse(BASE.as_bytes(), "tools.toml", SpecFormat::Toml).unwrap();
    let error = Agent::compile(parsed.with_tools(registry)).unwrap_err();
    assert_eq!(error.diagnostics[0].code, "duplicate-tool");
}

fn send(integrations: BTreeMap<String, Integration>) -> SendContext {
    SendContext::new(
        "2026-11-30T09:15:00Z".parse().unwrap(),
        ModelDescriptor {
            id: "gpt-4o".into(),
            name: "GPT-4o".into(),
            provider: "openai".into(),
            tool_usage: ToolUsage::Native,
            context_window: None,
        },
    )
    .with_integrations(integrations)
}

/// A spec declaring `tools` (name, requirement TOML) in the given order.
fn spec_with(tools: &[(String, String)]) -> String {
    let mut spec = String::from("spec_version = 1\nname = \"order\"\n");
    for (name, requires) in tools {
        spec.push_str(&format!(
            "\n[[tools]]\nname = \"{name}\"\ndescription = \"Tool {name}. Use it when needed. Retry once on failure.\"\n{requires}\n"
        ));
    }
    spec.push_str(
        r#"
[[blocks]]
id = "intro"
trust = "author"
stability = "stable"
template = "{% for name in tools %}{{ name }} {% endfor %}"

[targets.system]
system = ["@stable"]
"#,
    );
    spec
}

fn requirement() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("requires = { integration = \"google\" }".to_owned()),
        Just("requires = { setting = \"beta\" }".to_owned()),
        Just("requires = { setting = { name = \"web\", default = true } }".to_owned()),
        Just("requires = { skills = true }".to_owned()),
        Just("requires = { project_siblings = true }".to_owned()),
    ]
}

fn rich_send(
    google: Option<(bool, bool)>,
    beta: Option<bool>,
    web: Option<bool>,
    skills: usize,
    siblings: Option<bool>,
) -> SendContext {
    let mut ctx = send(
        google
            .map(|(connected, enabled)| {
                BTreeMap::from([("google".to_owned(), Integration { connected, enabled })])
            })
            .unwrap_or_default(),
    );
    if let Some(beta) = beta {
        ctx.settings.insert("beta".into(), json!(beta));
    }
    if let Some(web) = web {
        ctx.settings.insert("web".into(), json!(web));
    }
    ctx.skills = (0..skills)
        .map(|i| Skill {
            name: format!("skill{i}"),
            slug: None,
            description: "A skill.".into(),
            instructions: String::new(),
            tags: Vec::new(),
            disable_model_invocation: false,
            location: None,
            sites: Vec::new(),
        })
        .collect();
    *ctx.project = siblings.map(|has_sibling_threads| Project {
        name: "P".into(),
        instructions: None,
        has_sibling_threads,
    });
    ctx
}

fn context() -> impl Strategy<Value = SendContext> {
    (
        proptest::option::of((any::<bool>(), any::<bool>())),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
        0usize..2,
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(g, b, w, s, p)| rich_send(g, b, w, s, p))
}

/// What each requirement decides, written independently of the engine.
fn expected(requires: &str, ctx: &SendContext) -> bool {
    if requires.contains("google") {
        return ctx
            .integrations
            .get("google")
            .is_some_and(|i| i.connected && i.enabled);
    }
    if requires.contains("\"beta\"") {
        return ctx.settings.get("beta") == Some(&json!(true));
    }
    if requires.contains("\"web\"") {
        return ctx.settings.get("web") != Some(&json!(false));
    }
    if requires.contains("skills") {
        return !ctx.skills.is_empty();
    }
    if requires.contains("project_siblings") {
        return ctx.project.as_ref().is_some_and(|p| p.has_sibling_threads);
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The toolset and the prompt do not depend on the order tools are declared (registered) in,
    /// and a tool is offered exactly when its requirements hold.
    #[test]
    fn availability_and_canonical_order(
        tools in proptest::collection::btree_map("[a-z]{1,6}(_[a-z]{1,4})?", requirement(), 1..8),
        seed in any::<u64>(),
        ctx in context(),
    ) {
        let declared: Vec<(String, String)> = tools.into_iter().collect();
        let mut shuffled = declared.clone();
        crate::naming::shuffle(&mut shuffled, seed);
        let a = Agent::from_source(spec_with(&declared).as_bytes(), "a.toml", SpecFormat::Toml).unwrap();
        let b = Agent::from_source(spec_with(&shuffled).as_bytes(), "b.toml", SpecFormat::Toml).unwrap();
        let first = a.assemble(&ctx).unwrap();
        let second = b.assemble(&ctx).unwrap();
        let names: Vec<&str> = first.toolset().names().collect();
        prop_assert_eq!(&names, &second.toolset().names().collect::<Vec<_>>());
        prop_assert!(names.windows(2).all(|w| w[0] < w[1]));
        prop_assert_eq!(first.stable(), second.stable());
        for (name, requires) in &declared {
            prop_assert_eq!(first.toolset().contains(name), expected(requires, &ctx), "{} {}", name, requires);
        }
        // A connected but switched-off integration says so in the reason.
        if let Some(google) = ctx.integrations.get("google") {
            for excluded in first.toolset().excluded() {
                if excluded.reason.contains("`google`") {
                    prop_assert_eq!(excluded.reason.contains("switched off"), google.connected && !google.enabled);
                }
            }
        }
    }
}

const WITH_MCP: &str = include_str!("../data/specs/mcp.toml");

fn mcp_agent() -> Agent {
    Agent::from_source(WITH_MCP.as_bytes(), "mcp.toml", SpecFormat::Toml).unwrap()
}

fn mcp_send(servers: serde_json::Value) -> SendContext {
    let send = json!({
        "now": "2026-11-30T09:15:00Z",
        "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"},
        "mcp_servers": servers,
    });
    SendContext::from_json(send.to_string().as_bytes(), "send.json").unwrap()
}

fn listing(server: &str, tools: &[&str]) -> serde_json::Value {
    json!({
        "server": server,
        "status": "ready",
        "tools": tools.iter().map(|t| json!({
            "name": t,
            "description": format!("{t} on {server}"),
            "input_schema": {"type": "object", "properties": {}}
        })).collect::<Vec<_>>(),
    })
}

fn failed(server: &str) -> serde_json::Value {
    json!({
        "server": server,
        "status": "failed",
        "failure": {"stage": "connect", "timed_out": true, "message": "no answer to the mcp handshake within 2.0s"},
    })
}

#[test]
fn mcp_tools_join_the_toolset_without_touching_the_stable_half() {
    let agent = mcp_agent();
    let plain = agent.assemble(&mcp_send(json!([]))).unwrap();
    let send = mcp_send(json!([
        listing("files", &["read", "write"]),
        failed("tracker"),
        listing("git.hub", &["search"]),
    ]));
    let assembly = agent.assemble(&send).unwrap();
    assert_eq!(assembly.stable(), plain.stable());
    assert_eq!(assembly.fingerprint(), plain.fingerprint());
    assert_eq!(assembly.stable(), "Local tools: files_read.");

    let names: Vec<&str> = assembly.toolset().names().collect();
    // `files_read` is local, so the MCP tool of that plain name gets a stable hash suffix.
    let suffixed = assembly
        .toolset()
        .mcp_names()
        .name_of("files", "read")
        .unwrap();
    assert!(suffixed.starts_with("files_read_") && suffixed.len() == "files_read_".len() + 8);
    let mut expected = vec!["files_read", suffixed, "files_write", "git_hub_search"];
    expected.sort_unstable();
    assert_eq!(names, expected);
    let tool = offered(&assembly, "git_hub_search");
    assert_eq!(
        tool.origin,
        promptstack_core::toolset::ToolOrigin::Mcp {
            server: "git.hub".into(),
            tool: "search".into()
        }
    );
    assert_eq!(tool.results, promptstack_core::spec::ResultTrust::Untrusted);
    assert!(!tool.cacheable);

    assert_eq!(skipped_servers(&assembly), ["tracker"]);
    let warnings: Vec<String> = assembly
        .diagnostics()
        .filter(|d| d.code == "mcp-server-skipped")
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(
        warnings,
        [
            "MCP server `tracker` contributes no tools to this send: no answer to the mcp handshake within 2.0s"
        ]
    );
    let system = assembly.compose("system").unwrap().system;
    insta::assert_snapshot!(system, @r"
    Local tools: files_read.

    - files: files_read_b64d2b7a, files_write
    - git.hub: git_hub_search
    - tracker: unavailable on this send

    End.
    ");
}

#[test]
fn a_model_without_tool_use_gets_no_mcp_tools() {
    let agent = mcp_agent();
    let mut send = mcp_send(json!([listing("files", &["write"])]));
    send.model.tool_usage = ToolUsage::None;
    let assembly = agent.assemble(&send).unwrap();
    assert_eq!(assembly.toolset().names().count(), 0);
    let withheld = assembly.toolset().withheld_mcp_tools();
    assert_eq!(
        withheld.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["files_write"]
    );
}

#[test]
fn the_mcp_root_is_volatile() {
    let spec = WITH_MCP.replace(
        "template = \"Local tools: {{ tools | join(', ') }}.\"",
        "template = \"{{ mcp.tools }}\"",
    );
    let error = Agent::from_source(spec.as_bytes(), "mcp.toml", SpecFormat::Toml).unwrap_err();
    assert!(
        error
            .diagnostics
            .iter()
            .any(|d| d.code == "volatile-in-stable"),
        "{error}"
    );
}

fn listings() -> impl Strategy<Value = Vec<serde_json::Value>> {
    proptest::collection::vec(
        (
            prop_oneof![
                Just("files"),
                Just("git.hub"),
                Just("git hub"),
                Just("tracker"),
                Just("files_read")
            ],
            proptest::collection::vec(
                prop_oneof![Just("read"), Just("search"), Just("x"), Just("read.all")],
                0..4,
            ),
            any::<bool>(),
        ),
        0..5,
    )
    .prop_map(|servers| {
        let mut seen = std::collections::HashSet::new();
        servers
            .into_iter()
            .filter(|(server, _, _)| seen.insert(*server))
            .map(|(server, tools, ok)| {
                if ok {
                    listing(server, &tools)
                } else {
                    failed(server)
                }
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Whatever MCP servers answer, the stable half and the fingerprint stay the same; the toolset
    /// does not depend on the order servers are listed in, and every name is provider-safe.
    #[test]
    fn mcp_listings_never_move_the_stable_half(servers in listings(), seed in any::<u64>()) {
        let agent = mcp_agent();
        let plain = agent.assemble(&mcp_send(json!([]))).unwrap();
        let mut shuffled = servers.clone();
        crate::naming::shuffle(&mut shuffled, seed);
        let first = agent.assemble(&mcp_send(json!(servers))).unwrap();
        let second = agent.assemble(&mcp_send(json!(shuffled))).unwrap();
        prop_assert_eq!(first.stable(), plain.stable());
        prop_assert_eq!(first.fingerprint(), plain.fingerprint());
        let names: Vec<&str> = first.toolset().names().collect();
        prop_assert_eq!(&names, &second.toolset().names().collect::<Vec<_>>());
        prop_assert_eq!(first.compose("system").unwrap().system, second.compose("system").unwrap().system);
        prop_assert!(names.windows(2).all(|w| w[0] < w[1]));
        prop_assert!(names.iter().all(|n| promptstack_core::tools::naming::is_valid_tool_name(n)));
        // A later send with the same listings reuses the resolved MCP tools: same result.
        let again = agent.assemble(&mcp_send(json!(servers))).unwrap();
        prop_assert_eq!(&names, &again.toolset().names().collect::<Vec<_>>());
        prop_assert_eq!(first.compose("system").unwrap().system, again.compose("system").unwrap().system);
        let fresh = mcp_agent().assemble_fresh(&mcp_send(json!(servers))).unwrap();
        prop_assert_eq!(&names, &fresh.toolset().names().collect::<Vec<_>>());
    }
}

fn chat_agent_and_send(send: &str) -> (Agent, SendContext) {
    let root = crate::support::chat_dir();
    let agent = crate::support::chat_agent();
    let ctx = SendContext::from_json(&std::fs::read(root.join("sends").join(send)).unwrap(), send)
        .unwrap();
    (agent, ctx)
}

fn fixed_fence() -> std::sync::Arc<promptstack_core::fence::Fence> {
    use promptstack_core::fence::{Fence, FixedNonce, Nonce};
    std::sync::Arc::new(Fence::new(FixedNonce::new(
        Nonce::parse("0123456789abcdef").unwrap(),
    )))
}

#[test]
fn a_turn_built_from_an_assembly_fences_budgets_and_numbers() {
    use promptstack_core::turn::{FnExecutor, ToolExecutor, ToolOutput, TurnErrorKind};
    let (agent, ctx) = chat_agent_and_send("research.json");
    let assembly = agent.assemble(&ctx).unwrap();
    let executor = |_: &Tool| -> Option<std::sync::Arc<dyn ToolExecutor>> {
        Some(std::sync::Arc::new(FnExecutor::new(
            |input: serde_json::Value| async move {
                Ok(ToolOutput::new().source(
                    "https://example.org/heat-pumps?utm_source=x",
                    Some("Heat pumps"),
                    format!("results for {input}"),
                ))
            },
        )))
    };
    let turn = agent
        .turn_builder(&assembly, fixed_fence(), executor)
        .unwrap()
        .build()
        .unwrap();
    // `/research` selects the research intent of the default `web` class.
    assert_eq!(turn.cap("web"), Some(30));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let result = runtime
        .block_on(turn.call("search", &json!({"query": "heat pump costs"})))
        .unwrap();
    insta::assert_snapshot!(result.text, @r#"
    [Source 1] (cite as [1])
    <<<tool_result_0123456789abcdef origin="https://example.org" tool="search">>>
    results for {"query":"heat pump costs"}
    <<<end_tool_result_0123456789abcdef>>>

    Web calls remaining this turn: 29
    "#);
    // Trusted local tools are not fenced, and the same page (after canonicalisation) keeps its
    // number.
    let result = runtime
        .block_on(turn.call("render_html", &json!({"title": "t", "html": "<p>"})))
        .unwrap();
    assert_eq!(
        result.text,
        "[Source 1] (cite as [1])\nresults for {\"html\":\"<p>\",\"title\":\"t\"}"
    );

    let missing = agent.turn_builder(&assembly, fixed_fence(), |tool| {
        (tool.name != "search").then(|| executor(tool)).flatten()
    });
    let Err(missing) = missing else {
        panic!("a tool without an executor was accepted");
    };
    assert_eq!(
        missing.kind(),
        &TurnErrorKind::MissingExecutor("search".into())
    );
}

#[test]
fn the_spec_configures_the_turn() {
    use promptstack_core::turn::{FnExecutor, ToolOutput};
    let spec = r#"
spec_version = 1
name = "budgets"

[[tools]]
name = "search"
description = "Search. Use it for recent facts. Rephrase once if results are thin."
budget = "web"

[turn]
source_cap = 3
[turn.budgets.web]
auto = 2
intents = { deep = 4 }

[[blocks]]
id = "intro"
trust = "author"
stability = "stable"
text = "Hi."

[targets.system]
system = ["@stable"]
"#;
    let agent = Agent::from_source(spec.as_bytes(), "budgets.toml", SpecFormat::Toml).unwrap();
    assert_eq!(agent.turn_config().source_cap, 3);
    let executor = std::sync::Arc::new(FnExecutor::new(|_input: serde_json::Value| async move {
        Ok(ToolOutput::new().text("ok"))
    }));
    for (message, cap) in [
        ("plain question", 2),
        ("/deep question", 4),
        ("/research it", 2),
    ] {
        let assembly = agent
            .assemble(&send(BTreeMap::new()).with_user_message(message))
            .unwrap();
        let turn = agent
            .turn_builder(&assembly, fixed_fence(), |_| Some(executor.clone()))
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(turn.cap("web"), Some(cap), "{message}");
    }
}

proptest! {
    /// Whatever is registered, in whatever order: an invalid descriptor never enters, a name
    /// already taken is always refused, the first valid registration of a name is the one kept,
    /// and the registry lists its tools by name.
    #[test]
    fn the_registry_keeps_exactly_the_first_valid_tool_of_each_name(
        calls in proptest::collection::vec((prop_oneof![Just("a"), Just("b_b"), Just("c-c"), Just("bad name")], any::<bool>(), 0u8..4), 0..16),
    ) {
        let mut registry = ToolRegistry::new();
        let mut kept: BTreeMap<&str, u8> = BTreeMap::new();
        for (name, complete, version) in calls {
            let mut tool = descriptor(name);
            tool.description = if complete { format!("Version {version}. Use it when asked. Retry once.") } else { String::new() };
            let valid = complete && name != "bad name";
            match registry.register(tool) {
                Ok(_) => {
                    prop_assert!(valid && !kept.contains_key(name));
                    kept.insert(name, version);
                }
                Err(error) => match error.kind() {
                    RegistrationErrorKind::Conflict => prop_assert!(valid && kept.contains_key(name)),
                    RegistrationErrorKind::Invalid(problems) => prop_assert!(!valid && !problems.is_empty()),
                    other => prop_assert!(false, "{:?}", other),
                },
            }
        }
        let listed: Vec<(&str, String)> = registry.iter().map(|t| (t.name.as_str(), t.description.clone())).collect();
        let expected: Vec<(&str, String)> = kept
            .iter()
            .map(|(name, version)| (*name, format!("Version {version}. Use it when asked. Retry once.")))
            .collect();
        prop_assert_eq!(listed, expected);
    }
}

/// Issue 17.9: the fence kind of a tool's results is a known word, and only for untrusted results.
#[test]
fn the_fence_kind_is_checked() {
    let load = |fence: &str, results: &str| {
        let spec = format!(
            "spec_version = 1\nname = \"f\"\n[[blocks]]\nid = \"a\"\ntrust = \"author\"\nstability = \"stable\"\ntext = \"A.\"\n\
             [[tools]]\nname = \"read_page\"\ndescription = \"Read a page. If it fails, say so.\"\nresults = \"{results}\"\nfence = \"{fence}\"\n\
             [targets.main]\nsystem = [\"@body\"]\n"
        );
        Agent::from_source(spec.as_bytes(), "f.toml", SpecFormat::Toml)
    };
    for kind in ["web_content", "file_content", "tool_result"] {
        let agent = load(kind, "untrusted").unwrap();
        assert_eq!(agent.spec().tools[0].fence.as_str(), kind);
    }
    let unknown = load("web_page", "untrusted").unwrap_err().to_string();
    assert!(unknown.contains("web_page"), "{unknown}");
    assert!(unknown.contains("tools[0].fence"), "{unknown}");
    assert!(
        unknown.contains("file_content"),
        "the known words are named: {unknown}"
    );
    let trusted = load("web_content", "trusted").unwrap_err().to_string();
    assert!(trusted.contains("fence-on-trusted-results"), "{trusted}");
    assert!(trusted.contains("tools[0].fence"), "{trusted}");
}

/// Issue 17.13: a tool may declare a display name, a category and an icon key for the UI; they
/// are checked, reach the toolset, and MCP tools get a display name from their server's title.
#[test]
fn tools_carry_display_metadata() {
    let mut tool = descriptor("search");
    tool.display_name = Some("Web search".into());
    tool.category = Some("web".into());
    tool.icon = Some("globe".into());
    assert!(codes(&tool).is_empty(), "{:?}", descriptor_problems(&tool));
    for (display_name, category, icon) in [
        ("  ", "web", "globe"),
        ("Two\nlines", "web", "globe"),
        (&*"x".repeat(81), "web", "globe"),
        ("Search", "Web", "globe"),
        ("Search", "web", "globe icon"),
        ("Search", "web", ""),
    ] {
        tool.display_name = Some(display_name.into());
        tool.category = Some(category.into());
        tool.icon = Some(icon.into());
        assert_eq!(
            codes(&tool),
            ["bad-tool-display"],
            "{display_name:?} {category:?} {icon:?}"
        );
    }

    let spec = include_str!("../data/display.toml");
    let agent = Agent::from_source(spec.as_bytes(), "display.toml", SpecFormat::Toml).unwrap();
    let ctx = SendContext::from_json(
        serde_json::to_string(&json!({
            "now": "2026-11-30T09:15:00Z",
            "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai", "tool_usage": "native"},
            "mcp_servers": [
                {"server": "tracker", "title": "Issue Tracker", "status": "ready", "tools": [
                    {"name": "get_issue", "input_schema": {"type": "object"}}
                ]},
                {"server": "plain", "status": "ready", "tools": [
                    {"name": "ping", "input_schema": {"type": "object"}}
                ]}
            ]
        }))
        .unwrap()
        .as_bytes(),
        "send.json",
    )
    .unwrap();
    let assembly = agent.assemble(&ctx).unwrap();
    let tool = |name: &str| offered(&assembly, name);
    let search = tool("search");
    assert_eq!(search.display_name.as_deref(), Some("Web search"));
    assert_eq!(search.category.as_deref(), Some("web"));
    assert_eq!(search.icon.as_deref(), Some("globe"));
    assert_eq!(
        tool("tracker_get_issue").display_name.as_deref(),
        Some("Issue Tracker: get_issue")
    );
    assert_eq!(tool("plain_ping").display_name, None);
    let note = tool("note");
    assert!(note.display_name.is_none() && note.category.is_none() && note.icon.is_none());
}

/// Regression (issue 17.4): two listings of one server name were merged silently (one server's
/// tools dropped) while the servers table counted both. A repeated name is now refused, whatever
/// the order, with a diagnostic, and the servers table agrees with the tools.
#[test]
fn a_repeated_mcp_server_name_is_refused_and_reported() {
    let root = crate::support::chat_dir();
    let agent = crate::support::chat_agent();
    let mut send: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("sends/mcp.json")).unwrap()).unwrap();
    let servers = send["mcp_servers"].as_array_mut().unwrap();
    servers.push(json!({"server": "tracker", "status": "ready", "tools": [
        {"name": "close_issue", "input_schema": {"type": "object"}}
    ]}));
    let forward = send.clone();
    send["mcp_servers"].as_array_mut().unwrap().reverse();
    let backward = send;
    let mut systems = Vec::new();
    for send in [forward, backward] {
        let ctx = SendContext::from_json(send.to_string().as_bytes(), "send.json").unwrap();
        let assembly = agent.assemble(&ctx).unwrap();
        let names: Vec<&str> = assembly.toolset().names().collect();
        assert!(
            !names.iter().any(|n| n.starts_with("tracker_")),
            "no listing of a repeated name is used: {names:?}"
        );
        let conflict = assembly
            .diagnostics()
            .find(|d| d.code == "mcp-server-conflict")
            .expect("a diagnostic names the conflict");
        assert!(
            conflict
                .message
                .contains("the send lists MCP server `tracker` 2 times"),
            "{}",
            conflict.message
        );
        assert_eq!(skipped_servers(&assembly), ["docs.internal", "tracker"]);
        // The servers table the prompt reads says the same: tracker is unavailable, once.
        let system = assembly.compose("legacy").unwrap().system;
        assert!(
            system.contains("missing from your tool list: docs.internal, tracker."),
            "{system}"
        );
        systems.push(system);
    }
    assert_eq!(
        systems[0], systems[1],
        "the order of the listings does not matter"
    );
}
