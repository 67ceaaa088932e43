//! `promptstack tools` end to end, with real MCP servers from npm (installed by `scripts/test`
//! with `npm ci --prefix crates/promptstack/tests/mcp`), one that cannot start and one that hangs.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{promptstack, root, succeeds};
use insta_cmd::assert_cmd_snapshot;

const SPEC: &str = "examples/chat-assistant/agent.toml";

/// The entry script of an installed MCP server package, or a loud failure naming the install.
fn server_entry(package: &str) -> String {
    let path = root()
        .join("crates/promptstack/tests/mcp/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "`@modelcontextprotocol/{package}` is not installed; run `npm ci --prefix crates/promptstack/tests/mcp`"
    );
    path.to_string_lossy().into_owned()
}

/// Writes an MCP server list for `--mcp` and returns its path.
fn server_list(name: &str, servers: serde_json::Value) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.json"));
    std::fs::write(&path, servers.to_string()).unwrap();
    path
}

/// `promptstack tools` on the chat assistant's send `sends/{send}.json` with the MCP servers
/// listed in `servers`, given `timeout` seconds.
fn mcp_tools(send: &str, timeout: &str, servers: &Path) -> Command {
    let mut command = promptstack();
    command
        .args(["tools", SPEC, "--send"])
        .arg(format!("examples/chat-assistant/sends/{send}.json"))
        .args(["--mcp-timeout", timeout, "--mcp"])
        .arg(servers);
    command
}

/// A server whose command does not exist.
fn missing_server() -> serde_json::Value {
    serde_json::json!({"name": "missing", "transport": "stdio", "command": "/nonexistent/promptstack-mcp-server"})
}

/// A server that starts and never answers.
fn silent_server() -> serde_json::Value {
    serde_json::json!({"name": "silent", "transport": "stdio", "command": "node", "args": ["-e", "setInterval(() => {}, 1000)"]})
}

#[test]
fn help() {
    assert_cmd_snapshot!(promptstack().args(["tools", "--help"]));
}

#[test]
fn local_tools_with_reasons() {
    assert_cmd_snapshot!(promptstack().args([
        "tools",
        SPEC,
        "--send",
        "examples/chat-assistant/sends/project.json"
    ]));
}

#[test]
fn no_tools_for_a_model_without_tool_use() {
    assert_cmd_snapshot!(promptstack().args([
        "tools",
        SPEC,
        "--send",
        "examples/chat-assistant/sends/no-tools-model.json",
        "--json"
    ]));
}

/// Two servers whose tools share names, one that cannot start and one that never answers: the
/// send still resolves, within the timeout, and the skipped servers are reported.
#[test]
fn real_mcp_servers_are_contacted() {
    let servers = server_list(
        "cli-mcp-servers",
        serde_json::json!([
            {"name": "everything", "transport": "stdio", "command": "node",
             "args": [server_entry("server-everything"), "stdio"]},
            {"name": "every.thing", "transport": "stdio", "command": "node",
             "args": [server_entry("server-everything"), "stdio"]},
            missing_server(),
            silent_server()
        ]),
    );
    let output = succeeds(mcp_tools("research", "6", &servers).arg("--json"));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let tools = json["tools"].as_array().unwrap();
    let offered: Vec<&str> = tools
        .iter()
        .filter(|t| t["offered"] == true)
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(offered.windows(2).all(|w| w[0] < w[1]), "{offered:?}");
    assert!(offered.contains(&"search") && offered.contains(&"skill"));
    // The two servers list the same tool names; they stay apart and each maps back to its server.
    let echo: Vec<(&str, &str)> = tools
        .iter()
        .filter(|t| t["mcp_tool"] == "echo")
        .map(|t| (t["name"].as_str().unwrap(), t["origin"].as_str().unwrap()))
        .collect();
    assert_eq!(echo.len(), 2, "{echo:?}");
    assert!(
        echo.contains(&("everything_echo", "everything")),
        "{echo:?}"
    );
    assert!(
        echo.contains(&("every_thing_echo", "every.thing")),
        "{echo:?}"
    );
    for tool in tools.iter().filter(|t| t["origin"] != "local") {
        assert_eq!(tool["untrusted_results"], true);
        assert_eq!(
            tool["why"],
            format!(
                "listed by MCP server `{}`",
                tool["origin"].as_str().unwrap()
            )
        );
    }
    let servers: Vec<(&str, bool)> = json["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["ready"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        servers,
        [
            ("every.thing", true),
            ("everything", true),
            ("missing", false),
            ("silent", false)
        ]
    );
    let silent = &json["mcp_servers"][3]["failure"];
    assert_eq!(
        silent,
        "connect timed out: no answer to the mcp handshake within 6.0s"
    );
}

#[test]
fn failing_servers_in_the_table() {
    let servers = server_list(
        "cli-mcp-failing",
        serde_json::json!([missing_server(), silent_server()]),
    );
    let output = succeeds(&mut mcp_tools("plain", "1", &servers));
    let text = String::from_utf8(output.stdout).unwrap();
    let servers = &text[text.find("MCP servers").unwrap()..];
    insta::assert_snapshot!(servers, @r"
    MCP servers (2)
    missing  skipped  start failed: cannot start `/nonexistent/promptstack-mcp-server`: No such file or directory (os error 2) (skipped for this send; the stable half does not change)
    silent   skipped  connect timed out: no answer to the mcp handshake within 1.0s (skipped for this send; the stable half does not change)
    ");
}

#[test]
fn bad_server_lists_are_bad_input() {
    let duplicate = server_list(
        "cli-mcp-duplicate",
        serde_json::json!([
            {"name": "a", "transport": "stdio", "command": "x"},
            {"name": "a", "transport": "streamable_http", "url": "http://127.0.0.1:9/mcp"}
        ]),
    );
    let unknown = server_list(
        "cli-mcp-unknown",
        serde_json::json!([{"name": "a", "transport": "carrier_pigeon"}]),
    );
    for list in [duplicate, unknown] {
        let output = promptstack()
            .args([
                "tools",
                SPEC,
                "--send",
                "examples/chat-assistant/sends/plain.json",
                "--mcp",
            ])
            .arg(&list)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("error: "), "{stderr}");
    }
}

/// `render` and `explain` take `--mcp` like `tools`: the prompt a person reads is the one sent
/// with the live servers (here one that cannot start, so the prompt says it is unavailable).
#[test]
fn render_and_explain_contact_mcp_servers() {
    let servers = server_list(
        "cli-mcp-render",
        serde_json::json!([
            {"name": "missing", "transport": "stdio", "command": "/nonexistent/promptstack-mcp-server"}
        ]),
    );
    let send = "examples/chat-assistant/sends/plain.json";
    let unavailable = "Some tool servers the user connected are unavailable for this message, so their tools are missing from your tool list: missing.";
    let without = promptstack()
        .args(["render", SPEC, "--send", send, "--target", "legacy"])
        .output()
        .unwrap();
    assert!(without.status.success());
    assert!(!String::from_utf8_lossy(&without.stdout).contains(unavailable));
    let rendered = succeeds(
        promptstack()
            .args([
                "render", SPEC, "--send", send, "--target", "legacy", "--mcp",
            ])
            .arg(&servers),
    );
    assert!(
        String::from_utf8_lossy(&rendered.stdout).contains(unavailable),
        "{}",
        String::from_utf8_lossy(&rendered.stdout)
    );
    let explained = promptstack()
        .args([
            "explain", SPEC, "--send", send, "--target", "legacy", "--json", "--mcp",
        ])
        .arg(&servers)
        .output()
        .unwrap();
    assert!(explained.status.success());
    let json: serde_json::Value = serde_json::from_slice(&explained.stdout).unwrap();
    assert!(
        json["targets"][0]["system"]
            .as_str()
            .unwrap()
            .contains(unavailable)
    );
    // A bad timeout is refused by every command that takes --mcp.
    for command in ["render", "explain"] {
        let output = promptstack()
            .args([command, SPEC, "--send", send, "--mcp-timeout", "0", "--mcp"])
            .arg(&servers)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{command}");
    }
}

/// `explain --mcp` lists the tools a live server offers, under their namespaced names.
#[test]
fn explain_lists_the_tools_of_a_live_server() {
    let servers = server_list(
        "cli-mcp-explain",
        serde_json::json!([
            {"name": "everything", "transport": "stdio", "command": "node",
             "args": [server_entry("server-everything"), "stdio"]}
        ]),
    );
    let output = succeeds(
        promptstack()
            .args([
                "explain",
                SPEC,
                "--send",
                "examples/chat-assistant/sends/plain.json",
                "--target",
                "legacy",
                "--mcp-timeout",
                "20",
                "--mcp",
            ])
            .arg(&servers),
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let tools = text.lines().find(|l| l.starts_with("tools ")).unwrap();
    assert!(tools.contains("everything_echo"), "{tools}");
}

/// `tools --json` reports each tool's display name, category and icon key; an MCP tool's display
/// name comes from its server's title.
#[test]
fn display_metadata_is_reported() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    // The core's test of the same metadata reads the same spec.
    let spec = root().join("crates/promptstack-core/tests/data/display.toml");
    let send = dir.join("cli-display-send.json");
    std::fs::write(
        &send,
        serde_json::json!({
            "now": "2026-11-30T09:15:00Z",
            "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai", "tool_usage": "native"},
            "mcp_servers": [
                {"server": "tracker", "title": "Issue Tracker", "status": "ready", "tools": [
                    {"name": "get_issue", "input_schema": {"type": "object"}}
                ]}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let output = succeeds(
        promptstack()
            .args(["tools", "--json", "--send"])
            .arg(&send)
            .arg(&spec),
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let row = |name: &str| {
        json["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()
            .clone()
    };
    let search = row("search");
    assert_eq!(search["display_name"], "Web search");
    assert_eq!(search["category"], "web");
    assert_eq!(search["icon"], "globe");
    let note = row("note");
    assert!(note.get("display_name").is_none() && note.get("icon").is_none());
    assert_eq!(
        row("tracker_get_issue")["display_name"],
        "Issue Tracker: get_issue"
    );
}
