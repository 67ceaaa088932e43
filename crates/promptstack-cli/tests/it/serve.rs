//! `promptstack serve` through a real socket: preview = wire on every example send, graceful
//! shutdown, and two instances on one PostgreSQL database.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{promptstack, root, succeeds};

/// A running `promptstack serve`, killed when dropped.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: String,
}

impl Server {
    pub(crate) fn start(args: &[&str]) -> Server {
        let mut child = promptstack()
            .arg("serve")
            .args(["--listen", "127.0.0.1:0", "--rate-limit", "0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let addr = crate::support::listening(&mut child);
        Server { child, addr }
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> (u16, String, Vec<u8>) {
        http(&self.addr, method, path, key, body)
    }

    pub(crate) fn json(&self, method: &str, path: &str, key: &str, body: Value) -> (u16, Value) {
        let (status, _, bytes) = self.call(method, path, Some(key), Some(&body));
        let value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
            panic!(
                "{method} {path}: not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes)
            )
        });
        (status, value)
    }
}

impl Server {
    /// How many entries of the audit log (its first page, as `key` sees it) record `action`,
    /// and the page.
    pub(crate) fn audited(&self, key: &str, action: &str) -> (usize, Value) {
        let (_, audit) = self.json("GET", "/v1/audit", key, Value::Null);
        let count = audit["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["action"] == action)
            .count();
        (count, audit)
    }

    /// Kills the process at once (SIGKILL): nothing of it runs after this.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request over a fresh connection; returns the status, the raw head and the body.
fn http(
    addr: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&Value>,
) -> (u16, String, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(key) = key {
        head.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut body = raw[split + 4..].to_vec();
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, head, body)
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let end = raw.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..end]).unwrap().trim(), 16).unwrap();
        raw = &raw[end + 2..];
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

pub(crate) fn key(store: &[&str], tenant: &str, role: &str) -> String {
    let output = succeeds(
        promptstack()
            .args(["keys", "create", "--tenant", tenant, "--role", role])
            .args(store),
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Every target of the example agent in `dir`.
fn targets(dir: &Path) -> Vec<String> {
    let spec = dir.join("agent.toml");
    let bytes = std::fs::read(&spec).unwrap();
    let agent = promptstack::registry::compile(
        &bytes,
        &spec,
        promptstack::SpecFormat::Toml,
        &promptstack::limits::Limits::default(),
    )
    .unwrap();
    agent.target_ids().map(str::to_owned).collect()
}

#[test]
fn every_example_send_renders_byte_identical_to_the_cli() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_str().unwrap();
    let server = Server::start(&["--data", data_dir, "--examples", "examples"]);
    let key = key(&["--data", data_dir], "default", "viewer");
    let mut compared = 0;
    let mut examples: Vec<_> = std::fs::read_dir(root().join("examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("agent.toml").is_file())
        .collect();
    examples.sort();
    for dir in examples {
        let agent = dir.file_name().unwrap().to_str().unwrap().to_owned();
        let mut sends: Vec<_> = std::fs::read_dir(dir.join("sends"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        sends.sort();
        for send_path in sends {
            let send: Value = serde_json::from_slice(&std::fs::read(&send_path).unwrap()).unwrap();
            let relative_spec = format!("examples/{agent}/agent.toml");
            let relative_send = send_path
                .strip_prefix(root())
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            for target in targets(&dir) {
                for format in ["text", "anthropic"] {
                    let cli = promptstack()
                        .args([
                            "render",
                            &relative_spec,
                            "--send",
                            &relative_send,
                            "--target",
                            &target,
                            "--format",
                            format,
                        ])
                        .output()
                        .unwrap();
                    let (status, answer) = server.json(
                        "POST",
                        &format!("/v1/agents/{agent}/render"),
                        &key,
                        json!({"send": send, "target": target, "format": format}),
                    );
                    let what = format!("{relative_send} --target {target} --format {format}");
                    if !cli.status.success() {
                        assert!(
                            (400..500).contains(&status),
                            "{what}: the CLI refused, the server answered {status}: {answer}"
                        );
                        continue;
                    }
                    assert_eq!(status, 200, "{what}: {answer}");
                    let field = if format == "text" { "text" } else { "body" };
                    let served = answer[field].as_str().unwrap();
                    assert!(
                        served.as_bytes() == cli.stdout.as_slice(),
                        "{what}: the server's bytes differ from the CLI's"
                    );
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 50, "only {compared} renders compared");
}

#[cfg(unix)]
#[test]
fn sigterm_stops_the_server_gracefully() {
    let data = tempfile::tempdir().unwrap();
    let mut server = Server::start(&["--data", data.path().to_str().unwrap()]);
    let (status, _, _) = server.call("GET", "/healthz", None, None);
    assert_eq!(status, 200);
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let exit = server.child.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
}

/// Polls `check` until it holds, for at most `limit`; returns how long it took.
pub(crate) fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if check() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn two_instances_on_one_postgres_database_stay_consistent() {
    let database = crate::support::TestDatabase::create();
    let url = database.url().to_owned();
    // A TTL far longer than the test: only change notifications can make the second instance
    // see the first one's writes.
    let args = ["--database", url.as_str(), "--ttl-seconds", "3600"];
    let first = Server::start(&[&args[..], &["--examples", "examples"]].concat());
    let second = Server::start(&args);
    let admin = key(&["--database", &url], "default", "admin");
    let mut send: Value = serde_json::from_slice(
        &std::fs::read(root().join("examples/voice-platform/sends/default.json")).unwrap(),
    )
    .unwrap();
    // The tenant's instructions come from the settings, not the send.
    send.as_object_mut().unwrap().remove("tenant_instructions");
    let render = |server: &Server| {
        let (status, answer) = server.json(
            "POST",
            "/v1/agents/voice-platform/render",
            &admin,
            json!({"send": send, "target": "llm_context"}),
        );
        assert_eq!(status, 200, "{answer}");
        answer
    };
    let before = render(&second);
    let original = before["version"].as_str().unwrap().to_owned();

    // Publish a changed version on the first instance and move production there.
    let (_, detail) = first.json(
        "GET",
        &format!("/v1/agents/voice-platform/versions/{original}"),
        &admin,
        Value::Null,
    );
    let mut bundle = detail["bundle"].clone();
    let spec = bundle["spec"].as_str().unwrap().to_owned() + "\n# a second version\n";
    bundle["spec"] = Value::String(spec);
    let (status, published) =
        first.json("POST", "/v1/agents/voice-platform/versions", &admin, bundle);
    assert_eq!(status, 201, "{published}");
    let changed = published["version"]["id"].as_str().unwrap().to_owned();
    let (status, moved) = first.json(
        "PUT",
        "/v1/agents/voice-platform/labels/production",
        &admin,
        json!({"version": changed}),
    );
    assert_eq!(status, 200, "{moved}");
    let took = eventually(Duration::from_secs(10), || {
        render(&second)["version"] == changed.as_str()
    })
    .expect("the label move reaches the second instance");
    eprintln!("label move seen by the other instance after {took:?}");

    // A settings write on the second instance reaches renders on the first.
    let (status, written) = second.json("PUT", "/v1/settings", &admin,
        json!({"document": {"instructions": {"enabled": true, "text": "Mention the outage map first."}}}));
    assert_eq!(status, 200, "{written}");
    let took = eventually(Duration::from_secs(10), || {
        render(&first)["text"]
            .as_str()
            .is_some_and(|t| t.contains("Mention the outage map first."))
    })
    .expect("the settings write reaches the first instance");
    eprintln!("settings write seen by the other instance after {took:?}");
    drop(first);
    drop(second);
}

/// A TCP proxy the test can cut: while cut, open connections are shut down and new ones are
/// closed as soon as they are accepted.
struct Proxy {
    addr: String,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
    open: std::sync::Arc<std::sync::Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: String) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::<TcpStream>::new()));
        let (flag, streams) = (cut.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if flag.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                let mut list = streams.lock().unwrap();
                list.push(client.try_clone().unwrap());
                list.push(server.try_clone().unwrap());
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy { addr, cut, open }
    }

    fn set_cut(&self, cut: bool) {
        self.cut.store(cut, std::sync::atomic::Ordering::SeqCst);
        if cut {
            for stream in self.open.lock().unwrap().drain(..) {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

/// `url` with its host and port replaced by `addr`.
fn through(url: &str, addr: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let start = rest.find('@').map_or(0, |at| at + 1);
    let end = rest[start..]
        .find(['/', '?'])
        .map_or(rest.len(), |i| start + i);
    format!("{scheme}://{}{addr}{}", &rest[..start], &rest[end..])
}

#[test]
fn a_store_outage_keeps_cached_renders_and_refuses_writes() {
    let database = crate::support::TestDatabase::create();
    let direct = database.url().to_owned();
    let authority = {
        let rest = direct.split_once("://").unwrap().1;
        let start = rest.find('@').map_or(0, |at| at + 1);
        let end = rest[start..]
            .find(['/', '?'])
            .map_or(rest.len(), |i| start + i);
        rest[start..end].to_owned()
    };
    let proxy = Proxy::start(authority);
    let proxied = through(&direct, &proxy.addr);
    let server = Server::start(&[
        "--database",
        &proxied,
        "--examples",
        "examples",
        "--ttl-seconds",
        "1",
    ]);
    let admin = key(&["--database", &direct], "default", "admin");
    let mut send: Value = serde_json::from_slice(
        &std::fs::read(root().join("examples/voice-platform/sends/default.json")).unwrap(),
    )
    .unwrap();
    send.as_object_mut().unwrap().remove("tenant_instructions");
    let body = json!({"send": send, "target": "llm_context"});
    let (status, written) = server.json(
        "PUT",
        "/v1/settings",
        &admin,
        json!({"document": {"instructions": {"enabled": true, "text": "Before the outage."}}}),
    );
    assert_eq!(status, 200, "{written}");
    let (status, before) = server.json(
        "POST",
        "/v1/agents/voice-platform/render",
        &admin,
        body.clone(),
    );
    assert_eq!(status, 200, "{before}");
    assert!(
        before["text"]
            .as_str()
            .unwrap()
            .contains("Before the outage.")
    );
    let version = before["version"].as_str().unwrap().to_owned();

    proxy.set_cut(true);
    // Past the TTL: every cached entry must now be re-read, and cannot be.
    std::thread::sleep(Duration::from_millis(1500));
    let (status, during) = server.json(
        "POST",
        "/v1/agents/voice-platform/render",
        &admin,
        body.clone(),
    );
    assert_eq!(status, 200, "{during}");
    assert_eq!(during["text"], before["text"]);
    assert_eq!(during["version"], version.as_str());
    assert!(
        during["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "store-unavailable"),
        "{during}"
    );
    let (status, _, ready) = server.call("GET", "/readyz", None, None);
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&ready));
    let (status, refused) = server.json(
        "PUT",
        "/v1/settings",
        &admin,
        json!({"document": {"instructions": {"enabled": true, "text": "During the outage."}}}),
    );
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["status"], 503);
    let (status, refused) = server.json(
        "PUT",
        "/v1/agents/voice-platform/labels/staging",
        &admin,
        json!({"version": version}),
    );
    assert_eq!(status, 503, "{refused}");

    proxy.set_cut(false);
    eventually(Duration::from_secs(30), || {
        server.call("GET", "/readyz", None, None).0 == 200
    })
    .expect("ready again after the store is back");
    let (status, after) = server.json(
        "PUT",
        "/v1/settings",
        &admin,
        json!({"document": {"instructions": {"enabled": true, "text": "After the outage."}}}),
    );
    assert_eq!(status, 200, "{after}");
    // Every acknowledged write is there; the refused ones are not.
    let (_, settings) = server.json("GET", "/v1/settings", &admin, Value::Null);
    assert_eq!(settings["revision"], 2, "{settings}");
    assert_eq!(
        settings["document"]["instructions"]["text"],
        "After the outage."
    );
    let (_, labels) = server.json(
        "GET",
        "/v1/agents/voice-platform/labels",
        &admin,
        Value::Null,
    );
    assert!(
        labels
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["name"] != "staging"),
        "{labels}"
    );
    let (writes, audit) = server.audited(&admin, "settings.write");
    assert_eq!(writes, 2, "{audit}");
    drop(server);
}

/// A send of the voice platform's examples.
fn voice_send(name: &str) -> Value {
    let path = root().join("examples/voice-platform/sends").join(name);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The CLI's render of a voice platform send, target `llm_context`.
fn voice_cli(name: &str) -> Vec<u8> {
    let output = promptstack()
        .args(["render", "examples/voice-platform/agent.toml", "--send"])
        .arg(format!("examples/voice-platform/sends/{name}"))
        .args(["--target", "llm_context"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    output.stdout
}

#[test]
fn a_settings_preview_renders_unsaved_settings_over_stored_ones_and_stores_nothing() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_str().unwrap();
    let server = Server::start(&["--data", data_dir, "--examples", "examples"]);
    let admin = key(&["--data", data_dir], "default", "admin");
    let viewer = key(&["--data", data_dir], "default", "viewer");
    let render = "/v1/agents/voice-platform/render";

    let saved = json!({"auto_injections": {"capabilities": {"payments": {"mode": "off"}}}});
    let (status, written) = server.json(
        "PUT",
        "/v1/agents/voice-platform/settings",
        &admin,
        json!({"document": saved}),
    );
    assert_eq!(status, 200, "{written}");

    // A plain render returns the saved state: what the CLI renders for the send that carries
    // the same overrides. It is not a preview.
    let plain_body = json!({"send": voice_send("default.json"), "target": "llm_context"});
    let (status, head, bytes) = server.call("POST", render, Some(&viewer), Some(&plain_body));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let plain: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        plain["text"].as_str().unwrap().as_bytes(),
        voice_cli("payments-off.json").as_slice()
    );
    assert!(plain.get("preview").is_none(), "{plain}");
    assert!(
        !head.to_ascii_lowercase().contains("promptstack-preview"),
        "{head}"
    );

    // Unsaved overrides take the stored ones' place for one answer, for a viewer too: the
    // answer is the CLI's for the send that carries them, and it says it is a preview.
    let mut custom = voice_send("all-custom.json");
    let overrides = custom
        .as_object_mut()
        .unwrap()
        .remove("auto_injections")
        .unwrap();
    let settings = json!({"auto_injections": overrides});
    let preview_body = json!({"send": custom, "target": "llm_context", "settings": settings});
    let (status, head, bytes) = server.call("POST", render, Some(&viewer), Some(&preview_body));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let previewed: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        previewed["text"].as_str().unwrap().as_bytes(),
        voice_cli("all-custom.json").as_slice()
    );
    assert_eq!(previewed["preview"], true, "{previewed}");
    assert!(
        head.to_ascii_lowercase()
            .contains("promptstack-preview: settings"),
        "{head}"
    );
    assert_ne!(previewed["fingerprint"], plain["fingerprint"]);

    // Previewing the saved settings renders exactly the saved state.
    let (_, same) = server.json(
        "POST",
        render,
        &viewer,
        json!({"send": voice_send("default.json"), "target": "llm_context", "settings": saved}),
    );
    assert_eq!(same["text"], plain["text"]);
    assert_eq!(same["fingerprint"], plain["fingerprint"]);
    assert_eq!(same["preview"], true);

    // The tenant's instructions preview the same way.
    let welsh = "Always greet callers in Welsh first.";
    let (status, answer) = server.json(
        "POST",
        render,
        &viewer,
        json!({"send": voice_send("default.json"), "target": "llm_context",
               "settings": {"instructions": {"enabled": true, "text": welsh}}}),
    );
    assert_eq!(status, 200, "{answer}");
    assert!(answer["text"].as_str().unwrap().contains(welsh), "{answer}");

    // Every render-like endpoint the inspector uses takes them.
    let mut send = voice_send("default.json");
    send["user_message"] = json!("I want to pay my bill.");
    for (endpoint, body) in [
        ("explain", json!({"send": send, "settings": settings})),
        (
            "request",
            json!({"send": send, "target": "llm_context", "settings": settings}),
        ),
        ("tools", json!({"send": send, "settings": settings})),
        (
            "diff",
            json!({"send": send, "target": "llm_context", "settings": settings}),
        ),
        ("lint", json!({"sends": [send], "settings": settings})),
    ] {
        let (status, answer) = server.json(
            "POST",
            &format!("/v1/agents/voice-platform/{endpoint}"),
            &viewer,
            body,
        );
        assert_eq!(status, 200, "{endpoint}: {answer}");
        assert_eq!(answer["preview"], true, "{endpoint}: {answer}");
    }
    let (status, head, bytes) = server.call(
        "POST",
        "/v1/agents/voice-platform/cache-sim",
        Some(&viewer),
        Some(&json!({"target": "llm_context", "turns": 3, "settings": settings})),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    assert!(
        head.to_ascii_lowercase()
            .contains("promptstack-preview: settings")
    );

    // Settings are checked as a write checks them; each error names where it is.
    for (settings, at) in [
        (json!({"colour": "blue"}), "settings.colour"),
        (json!({"auto_injections": 3}), "settings.auto_injections"),
        (
            json!({"instructions": {"enabled": "yes", "text": "x"}}),
            "settings.instructions",
        ),
        (json!(["auto_injections"]), "settings"),
    ] {
        let (status, problem) = server.json(
            "POST",
            render,
            &viewer,
            json!({"send": voice_send("default.json"), "target": "llm_context", "settings": settings}),
        );
        assert_eq!(status, 422, "{settings}: {problem}");
        assert!(
            problem["type"]
                .as_str()
                .unwrap()
                .ends_with("/invalid-settings"),
            "{problem}"
        );
        assert_eq!(problem["diagnostics"][0]["subject"], at, "{problem}");
    }
    // An agent without a stage has no settings to preview.
    let research: Value = serde_json::from_slice(
        &std::fs::read(root().join("examples/chat-assistant/sends/research.json")).unwrap(),
    )
    .unwrap();
    let (status, problem) = server.json(
        "POST",
        "/v1/agents/chat-assistant/render",
        &viewer,
        json!({"send": research, "target": "cached", "settings": settings}),
    );
    assert_eq!(status, 422, "{problem}");
    assert_eq!(
        problem["diagnostics"][0]["subject"], "settings",
        "{problem}"
    );

    // Nothing was stored: the settings are the one write, audited once.
    let (_, stored) = server.json(
        "GET",
        "/v1/agents/voice-platform/settings",
        &viewer,
        Value::Null,
    );
    assert_eq!(stored["revision"], 1, "{stored}");
    assert_eq!(stored["document"], saved);
    let (writes, audit) = server.audited(&admin, "settings.write");
    assert_eq!(writes, 1, "{audit}");
}

#[test]
fn the_tenant_quota_flags_reach_the_store() {
    let data = tempfile::tempdir().unwrap();
    let data_dir = data.path().to_str().unwrap();
    let editor = key(&["--data", data_dir], "acme", "editor");
    let admin = key(&["--data", data_dir], "acme", "admin");
    let server = Server::start(&[
        "--data",
        data_dir,
        "--max-versions-per-agent",
        "1",
        "--max-agents-per-tenant",
        "2",
        "--max-settings-bytes",
        "100",
    ]);
    let spec = |text: &str| {
        json!({"spec": format!(
            "spec_version = 1\nname = \"t\"\n\n[targets.system]\nsystem = [\"@stable\"]\n\n\
             [[blocks]]\nid = \"a\"\ntrust = \"author\"\nstability = \"stable\"\ntext = \"{text}\"\n"
        )})
    };
    let (status, _) = server.json("POST", "/v1/agents/one/versions", &editor, spec("v1"));
    assert_eq!(status, 201);
    let (status, problem) = server.json("POST", "/v1/agents/one/versions", &editor, spec("v2"));
    assert_eq!(status, 422, "{problem}");
    assert_eq!(
        problem["type"],
        "https://promptstack.dev/problems/quota-exceeded"
    );
    let (status, _) = server.json("POST", "/v1/agents/two/versions", &editor, spec("v1"));
    assert_eq!(status, 201);
    let (status, problem) = server.json("POST", "/v1/agents/three/versions", &editor, spec("v1"));
    assert_eq!(status, 422, "{problem}");
    let document = json!({"instructions": {"enabled": true, "text": "x".repeat(200)}});
    let (status, problem) =
        server.json("PUT", "/v1/settings", &admin, json!({"document": document}));
    assert_eq!(status, 413, "{problem}");
}
