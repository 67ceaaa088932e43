//! MCP discovery against real MCP servers from npm, plus servers that fail and hang.
//!
//! The servers are pinned in `tests/mcp/package.json` and installed with
//! `npm ci --prefix crates/promptstack/tests/mcp`. A missing install fails these tests loudly.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use promptstack::mcp::{
    DiscoveryConfig, McpDirectory, McpServerConfig, McpTransport, RetryPolicy, discover_all,
    discover_server,
};
use promptstack::tools::mcp::merge_mcp_tools;
use promptstack::tools::mcp::{
    McpFailure, McpFailureStage, McpServerListing, McpServerStatus, McpTool,
};
use tokio::io::{AsyncBufReadExt, BufReader};

const INSTALL: &str = "npm ci --prefix crates/promptstack/tests/mcp";

/// Every test's discovery must end well within this; a test that would hang fails instead.
const GUARD: Duration = Duration::from_secs(90);

fn mcp_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp")
}

/// The entry script of an installed server package, or a loud failure naming the install command.
fn server_entry(package: &str) -> String {
    let path = mcp_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "the MCP test server `@modelcontextprotocol/{package}` is not installed at {}; run `{INSTALL}` from the repository root",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

fn node() -> String {
    let found = std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        found,
        "`node` is not on PATH; the MCP integration tests need Node.js and `{INSTALL}`"
    );
    "node".to_owned()
}

fn stdio(name: &str, args: &[&str], env: &[(&str, &str)]) -> McpServerConfig {
    McpServerConfig {
        name: name.to_owned(),
        transport: McpTransport::Stdio {
            command: node(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cwd: None,
        },
    }
}

/// A server whose command does not exist.
fn missing() -> McpServerConfig {
    McpServerConfig {
        name: "missing".into(),
        transport: McpTransport::Stdio {
            command: "/nonexistent/promptstack-mcp-server".into(),
            args: vec![],
            env: BTreeMap::new(),
            cwd: None,
        },
    }
}

fn everything(name: &str) -> McpServerConfig {
    stdio(name, &[&server_entry("server-everything"), "stdio"], &[])
}

fn github() -> McpServerConfig {
    stdio("github", &[&server_entry("server-github")], &[])
}

fn gitlab() -> McpServerConfig {
    // The server refuses to start without a token, but listing tools never uses it; the API URL
    // points at a closed loopback port so that nothing could leave the machine anyway.
    stdio(
        "gitlab",
        &[&server_entry("server-gitlab")],
        &[
            ("GITLAB_PERSONAL_ACCESS_TOKEN", "unused-by-discovery"),
            ("GITLAB_API_URL", "http://127.0.0.1:9/api/v4"),
        ],
    )
}

fn config() -> DiscoveryConfig {
    DiscoveryConfig {
        connect_timeout: Duration::from_secs(30),
        list_timeout: Duration::from_secs(30),
        ..DiscoveryConfig::default()
    }
}

/// Short enough for hanging servers to time out quickly, long enough for a healthy Node server to
/// start on a loaded machine.
fn short() -> DiscoveryConfig {
    DiscoveryConfig {
        connect_timeout: Duration::from_secs(6),
        list_timeout: Duration::from_secs(6),
        ..DiscoveryConfig::default()
    }
}

async fn guarded<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(GUARD, future)
        .await
        .expect("discovery did not respect its timeouts")
}

fn tools(listing: &McpServerListing) -> &[McpTool] {
    match &listing.status {
        McpServerStatus::Ready { tools } => tools,
        McpServerStatus::Failed { failure } => panic!("`{}` failed: {failure:?}", listing.server),
    }
}

fn failure(listing: &McpServerListing) -> &McpFailure {
    match &listing.status {
        McpServerStatus::Failed { failure } => failure,
        McpServerStatus::Ready { tools } => {
            panic!("`{}` listed {} tools", listing.server, tools.len())
        }
    }
}

fn names(tools: &[McpTool]) -> Vec<&str> {
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_lists_its_tools() {
    let listing = guarded(discover_server(&everything("everything"), &config())).await;
    let tools = tools(&listing);
    let names = names(tools);
    for expected in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "trigger-long-running-operation",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert!(echo.description.as_deref().is_some_and(|d| !d.is_empty()));
    assert_eq!(echo.input_schema["type"], "object");
    assert!(
        echo.input_schema["properties"]["message"].is_object(),
        "{:?}",
        echo.input_schema
    );
}

/// Starts the everything server's streamable HTTP transport on a free loopback port.
async fn start_everything_http() -> (tokio::process::Child, u16) {
    server_entry("server-everything");
    let mut child = tokio::process::Command::new(node())
        .arg(mcp_dir().join("everything-http.mjs"))
        .env("PORT", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the everything server over HTTP");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port = tokio::time::timeout(GUARD, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(address) = line.strip_prefix("promptstack-test listening on 127.0.0.1:") {
                return address.trim().parse::<u16>().unwrap();
            }
        }
        panic!("the HTTP server exited before listening");
    })
    .await
    .expect("the HTTP server did not report its port");
    // Keep draining stderr so the server never blocks on it.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, port)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http_lists_the_same_tools() {
    let (_server, port) = start_everything_http().await;
    let http = McpServerConfig {
        name: "everything".into(),
        transport: McpTransport::StreamableHttp {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: BTreeMap::from([("X-Test".to_owned(), "promptstack".to_owned())]),
        },
    };
    let listings = guarded(discover_all(&[http, everything("everything")], &config())).await;
    let over_http = tools(&listings[0]);
    let over_stdio = tools(&listings[1]);
    assert!(over_http.len() >= 10, "{:?}", names(over_http));
    assert_eq!(names(over_http), names(over_stdio));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_lists_its_tools() {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-filesystem-root");
    std::fs::create_dir_all(&root).unwrap();
    let server = stdio(
        "files",
        &[&server_entry("server-filesystem"), &root.to_string_lossy()],
        &[],
    );
    let listing = guarded(discover_server(&server, &config())).await;
    let names = names(tools(&listing));
    for expected in [
        "read_text_file",
        "write_file",
        "list_directory",
        "search_files",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_sharing_tool_names_are_namespaced_apart_in_any_order() {
    let listings = guarded(discover_all(&[github(), gitlab()], &config())).await;
    let shared: Vec<&str> = names(tools(&listings[0]))
        .into_iter()
        .filter(|n| names(tools(&listings[1])).contains(n))
        .collect();
    assert!(
        shared.contains(&"create_issue") && shared.len() >= 5,
        "{shared:?}"
    );

    let local = ["gitlab_create_issue", "search"];
    let merged = merge_mcp_tools(&listings, local);
    for tool in &shared {
        let from_github = merged.names.name_of("github", tool).unwrap();
        let from_gitlab = merged.names.name_of("gitlab", tool).unwrap();
        assert_ne!(from_github, from_gitlab);
        assert_eq!(merged.names.origin(from_gitlab).unwrap().server, "gitlab");
    }
    assert_eq!(
        merged.names.name_of("github", "create_issue"),
        Some("github_create_issue")
    );
    // A local tool already holds `gitlab_create_issue`: the MCP tool gets a stable suffix.
    let suffixed = merged.names.name_of("gitlab", "create_issue").unwrap();
    assert!(
        suffixed.starts_with("gitlab_create_issue_")
            && suffixed.len() == "gitlab_create_issue_".len() + 8
    );
    let all: Vec<_> = merged.tools().collect();
    assert!(
        all.iter()
            .all(|t| promptstack::tools::naming::is_valid_tool_name(t.name))
    );
    assert!(all.windows(2).all(|w| w[0].name < w[1].name));

    let reversed = guarded(discover_all(&[gitlab(), github()], &config())).await;
    assert_eq!(merge_mcp_tools(&reversed, local), merged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_names_that_sanitise_alike_get_order_independent_suffixes() {
    let a = everything("every.thing");
    let b = everything("every thing");
    let forward = guarded(discover_all(&[a.clone(), b.clone()], &config())).await;
    let backward = guarded(discover_all(&[b, a], &config())).await;
    let merged = merge_mcp_tools(&forward, []);
    assert_eq!(merge_mcp_tools(&backward, []), merged);
    let echo_a = merged.names.name_of("every.thing", "echo").unwrap();
    let echo_b = merged.names.name_of("every thing", "echo").unwrap();
    assert_ne!(echo_a, echo_b);
    assert!(echo_a.starts_with("every_thing_echo_") && echo_b.starts_with("every_thing_echo_"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_is_a_diagnostic() {
    let missing = missing();
    let listing = guarded(discover_server(&missing, &short())).await;
    let start = failure(&listing);
    assert_eq!(start.stage, McpFailureStage::Start);
    assert!(!start.timed_out);
    assert!(
        start
            .message
            .contains("cannot start `/nonexistent/promptstack-mcp-server`"),
        "{}",
        start.message
    );

    let crashing = stdio(
        "crashing",
        &[
            "-e",
            "console.error('fatal: no config file'); process.exit(3)",
        ],
        &[],
    );
    let listing = guarded(discover_server(&crashing, &short())).await;
    let crash = failure(&listing);
    assert_eq!(crash.stage, McpFailureStage::Connect);
    assert!(!crash.timed_out, "{crash:?}");
    assert!(
        crash.message.contains("fatal: no config file"),
        "{}",
        crash.message
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hanging_servers_hit_their_timeouts() {
    let silent = stdio("silent", &["-e", "setInterval(() => {}, 1000)"], &[]);
    let stuck = stdio(
        "stuck",
        &[&mcp_dir().join("hang-on-list.mjs").to_string_lossy()],
        &[],
    );
    // A loopback HTTP endpoint that accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepting = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let mute = McpServerConfig {
        name: "mute".into(),
        transport: McpTransport::StreamableHttp {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: BTreeMap::new(),
        },
    };
    let listings = guarded(discover_all(
        &[silent, stuck, mute, everything("fine")],
        &short(),
    ))
    .await;
    let silent = failure(&listings[0]);
    assert_eq!(
        (silent.stage, silent.timed_out),
        (McpFailureStage::Connect, true),
        "{silent:?}"
    );
    let stuck = failure(&listings[1]);
    assert_eq!(
        (stuck.stage, stuck.timed_out),
        (McpFailureStage::List, true),
        "{stuck:?}"
    );
    let mute = failure(&listings[2]);
    assert_eq!(
        (mute.stage, mute.timed_out),
        (McpFailureStage::Connect, true),
        "{mute:?}"
    );
    // The healthy server is unaffected, and the merged toolset skips the others.
    let merged = merge_mcp_tools(&listings, []);
    assert!(merged.tools().all(|t| t.origin.server == "fine") && !merged.is_empty());
    let skipped: Vec<&str> = merged.skipped.iter().map(|s| s.server.as_str()).collect();
    assert_eq!(skipped, ["mute", "silent", "stuck"]);
    accepting.abort();
}

/// Servers that never stop paginating, list too many tools or too many bytes fail to list with
/// the limit named, long before the timeout; a healthy server beside them is unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_listing_without_end_are_cut_off_at_their_caps() {
    let script = mcp_dir().join("misbehave.mjs");
    let script = script.to_string_lossy();
    let misbehaving = ["endless-pages", "many-tools", "huge-tools"]
        .map(|mode| stdio(mode, &[&script, mode], &[]));
    let caps = DiscoveryConfig {
        connect_timeout: Duration::from_secs(30),
        list_timeout: Duration::from_secs(60),
        max_pages: 50,
        max_tools: 2000,
        max_bytes: 4 * 1024 * 1024,
    };
    let mut servers = misbehaving.to_vec();
    servers.push(everything("fine"));
    let listings = guarded(discover_all(&servers, &caps)).await;
    let expected = [
        "after 50 pages (the `mcp-pages` limit)",
        "more than 2000 tools (the `mcp-tools` limit)",
        "exceed 4 MiB (the `mcp-bytes` limit)",
    ];
    for (listing, expected) in listings.iter().zip(expected) {
        let failure = failure(listing);
        assert_eq!(
            (failure.stage, failure.timed_out),
            (McpFailureStage::List, false),
            "{failure:?}"
        );
        assert!(failure.message.contains(expected), "{failure:?}");
    }
    assert!(!tools(&listings[3]).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_servers_are_retried_in_the_background() {
    let script = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mcp-late-server.mjs");
    let _ = std::fs::remove_file(&script);
    let late = stdio("late", &[&script.to_string_lossy(), "stdio"], &[]);
    let directory = McpDirectory::new(vec![everything("ready"), late], short());
    assert!(
        matches!(&directory.listings()[1].status, McpServerStatus::Failed { failure } if failure.message == "not discovered yet")
    );

    let first = guarded(directory.refresh_all()).await;
    assert!(!tools(&first[0]).is_empty());
    assert_eq!(failure(&first[1]).stage, McpFailureStage::Connect);

    // The server becomes available; the application runs the retry future on its own runtime.
    let entry = server_entry("server-everything");
    std::fs::write(&script, format!("await import({entry:?});\n")).unwrap();
    let retry = directory.retry_failed(RetryPolicy {
        first_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(200),
        max_rounds: Some(50),
    });
    guarded(tokio::spawn(retry)).await.unwrap();
    let listings = directory.listings();
    assert_eq!(names(tools(&listings[1])), names(tools(&listings[0])));
    assert_eq!(guarded(directory.refresh_failed()).await, 0);
}

/// Real discovery results, healthy and failed, go into a send: it still assembles, the MCP tools
/// join the toolset under namespaced names, and the stable half is the one without any server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_with_failed_servers_still_assembles_with_the_same_stable_half() {
    use promptstack::{Agent, SendContext, SpecFormat};
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant");
    let agent = Agent::from_source(
        &std::fs::read(examples.join("agent.toml")).unwrap(),
        "agent.toml",
        SpecFormat::Toml,
    )
    .unwrap();
    let send = SendContext::from_json(
        &std::fs::read(examples.join("sends/research.json")).unwrap(),
        "research.json",
    )
    .unwrap();
    let plain = agent.assemble(&send).unwrap();

    let missing = missing();
    let silent = stdio("silent", &["-e", "setInterval(() => {}, 1000)"], &[]);
    let listings = guarded(discover_all(
        &[missing, everything("everything"), silent, github()],
        &short(),
    ))
    .await;
    let mut with_servers = send.clone();
    with_servers.mcp_servers = listings;
    let assembly = agent.assemble(&with_servers).unwrap();

    assert_eq!(assembly.stable(), plain.stable());
    assert_eq!(assembly.fingerprint(), plain.fingerprint());
    let toolset = assembly.toolset();
    assert!(toolset.contains("everything_echo") && toolset.contains("github_create_issue"));
    assert!(toolset.contains("search") && toolset.contains("skill"));
    let names: Vec<&str> = toolset.names().collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]));
    let origin = toolset.mcp_origin("github_create_issue").unwrap();
    assert_eq!(
        (origin.server.as_str(), origin.tool.as_str()),
        ("github", "create_issue")
    );
    let skipped: Vec<&str> = toolset
        .skipped_servers()
        .iter()
        .map(|s| s.server.as_str())
        .collect();
    assert_eq!(skipped, ["missing", "silent"]);
    let warned = assembly
        .diagnostics()
        .filter(|d| d.code == "mcp-server-skipped")
        .count();
    assert_eq!(warned, 2);
    // The servers reach the prompt only through the volatile note that lists them.
    let legacy = assembly.compose("legacy").unwrap();
    assert!(legacy.system.starts_with(plain.stable()));
}
