//! The server's hostile-input suite: every case under `tests/hostile-server/` (see its README),
//! and every template case of the command line's suite, goes over HTTP to the real binary,
//! `promptstack serve --examples` on SQLite under an address-space limit (`prlimit --as`, 1 GiB).
//! Tenant A (`default`, which holds the examples) is the attacker; tenant B (`neighbour`) renders
//! its own agent throughout. After every case, four things must hold: the process is alive,
//! `/healthz` answers 200, every answer had the expected status (a problem+json document with the
//! expected type for an error), and every render of tenant B was answered 200 within
//! [`B_BOUND`].
//!
//! Each case prints one line, `server:class__case: 0.12 s, peak 30 MiB, b-p99 12 ms` (the slowest
//! answer of the case, the server's peak resident memory during it, and tenant B's 99th
//! percentile render time), which `scripts/hostile-report` reads. Those figures are printed,
//! never asserted, except tenant B's bound.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use insta_cmd::get_cargo_bin;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::{root, succeeded};

/// The longest tenant B's render may take, during any case. Generous, because CI machines are
/// loaded; the figures printed show the real times.
const B_BOUND: Duration = Duration::from_secs(3);

/// The server's body limit (`serve --max-body-bytes`, default).
const BODY_LIMIT: usize = 1024 * 1024;

/// The server's address-space limit.
const MEMORY_MIB: u64 = 1024;

/// One case: requests of tenant A in order, optionally under a background load.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case shows, in one sentence.
    about: String,
    /// Requests made before the load starts (publishing what the load renders).
    #[serde(default)]
    setup: Vec<Step>,
    /// The requests, in order (while the load runs, when there is one).
    #[serde(default)]
    requests: Vec<Step>,
    /// Load kept up while the requests run and tenant B is measured.
    load: Option<Load>,
}

/// One request and what must come of it.
#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
struct Step {
    /// Whose key: `a-editor`, `a-viewer`, `b-viewer`, or `none`.
    #[serde(rename = "as", default = "a_editor")]
    who: String,
    #[serde(default = "post")]
    method: String,
    /// The path; `{version}` is the version the last publish answered.
    path: String,
    /// A JSON body (a TOML table); strings have `{version}` replaced.
    json: Option<toml::Value>,
    /// A generated body: `prefix`, `text` × `repeat` (`{n}` in it replaced by the repetition's
    /// number), `suffix`.
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    text: String,
    #[serde(default = "one")]
    repeat: usize,
    #[serde(default)]
    suffix: String,
    /// Send the generated body with chunked framing instead of a `Content-Length`.
    #[serde(default)]
    chunked: bool,
    /// The expected status.
    status: u16,
    /// The expected problem type (the last part of its URI), for an error status.
    problem: Option<String>,
}

fn a_editor() -> String {
    "a-editor".to_owned()
}

fn post() -> String {
    "POST".to_owned()
}

fn one() -> usize {
    1
}

/// Connections or requests kept up in the background.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Load {
    /// `half-open` (a request head never finished), `slow-body` (a body sent a byte a second),
    /// `cite-streams` (cite streams held open, each sending a little text now and then), or
    /// `requests` (the `request` below, sent back to back by each connection).
    kind: String,
    /// How many connections.
    connections: usize,
    /// How long tenant B is measured under the load, in seconds.
    #[serde(default = "five")]
    seconds: u64,
    /// For `requests`: what each connection sends.
    request: Option<Step>,
}

fn five() -> u64 {
    5
}

/// Extra arguments for `serve`, from `PROMPTSTACK_HOSTILE_SERVE_ARGS` (space-separated): for
/// measuring, e.g. `--tenant-engine-share 4` gives one tenant the whole engine, which shows
/// what the fair share is worth in the noisy-neighbour figures.
fn extra_serve_args() -> Vec<String> {
    std::env::var("PROMPTSTACK_HOSTILE_SERVE_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Only the classes named in `PROMPTSTACK_HOSTILE_CLASSES` (comma-separated), when it is set.
fn wanted(class: &str) -> bool {
    std::env::var("PROMPTSTACK_HOSTILE_CLASSES")
        .map_or(true, |list| list.split(',').any(|c| c.trim() == class))
}

/// Keys of the two tenants.
struct Keys {
    a_editor: String,
    a_viewer: String,
    b_viewer: String,
}

/// A running `promptstack serve`, killed when dropped.
struct Server {
    child: Child,
    addr: String,
    keys: Keys,
    /// Tenant B's render: path and body.
    b_render: (String, Vec<u8>),
    _data: tempfile::TempDir,
}

fn key(data: &str, tenant: &str, role: &str) -> String {
    let output = succeeded(&[
        "keys", "create", "--tenant", tenant, "--role", role, "--data", data,
    ]);
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

impl Server {
    fn start() -> Server {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().to_str().unwrap().to_owned();
        let a_editor = key(&dir, "default", "editor");
        let a_viewer = key(&dir, "default", "viewer");
        let b_editor = key(&dir, "neighbour", "editor");
        let b_viewer = key(&dir, "neighbour", "viewer");
        let mut child = Command::new("prlimit")
            .arg(format!("--as={}:unlimited", MEMORY_MIB * 1024 * 1024))
            .arg("--")
            .arg(get_cargo_bin("promptstack"))
            .args(["serve", "--listen", "127.0.0.1:0", "--rate-limit", "0"])
            .args(["--data", &dir, "--examples", "examples"])
            .args(extra_serve_args())
            .current_dir(root())
            // glibc reserves 64 MiB of address space per malloc arena; two keep the limit about
            // memory actually used.
            .env("MALLOC_ARENA_MAX", "2")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("prlimit (util-linux) must be installed");
        // A panic or an allocation failure is shown from stderr; the liveness check finds the end.
        let addr = crate::support::listening(&mut child);
        // Tenant B publishes the chat assistant and renders it by version id.
        let bundle = promptstack_server::Bundle::from_dir(
            &root().join("examples/chat-assistant"),
            &promptstack::limits::Limits::default(),
        )
        .unwrap();
        let answer = http(
            &addr,
            "POST",
            "/v1/agents/chat-assistant/versions",
            Some(&b_editor),
            &Body::Full(serde_json::to_vec(&bundle).unwrap()),
        )
        .unwrap();
        assert_eq!(answer.status, 201, "{}", answer.text());
        let version = answer.json()["version"]["id"].as_str().unwrap().to_owned();
        let send: Value = serde_json::from_slice(
            &std::fs::read(root().join("examples/chat-assistant/sends/research.json")).unwrap(),
        )
        .unwrap();
        let b_render = (
            "/v1/agents/chat-assistant/render".to_owned(),
            serde_json::to_vec(&json!({"ref": version, "send": send, "target": "cached"})).unwrap(),
        );
        Server {
            child,
            addr,
            keys: Keys {
                a_editor,
                a_viewer,
                b_viewer,
            },
            b_render,
            _data: data,
        }
    }

    fn key(&self, who: &str) -> Option<&str> {
        match who {
            "a-editor" => Some(&self.keys.a_editor),
            "a-viewer" => Some(&self.keys.a_viewer),
            "b-viewer" => Some(&self.keys.b_viewer),
            "none" => None,
            other => panic!("unknown key `{other}`"),
        }
    }

    fn alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!("the server ended: {status}")),
            Err(e) => Err(format!("cannot wait for the server: {e}")),
        }
    }

    /// Resets the peak resident memory the kernel records for the server.
    fn reset_peak(&self) {
        let _ = std::fs::write(format!("/proc/{}/clear_refs", self.child.id()), "5");
    }

    /// The peak resident memory since the last reset, in MiB.
    fn peak_mib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib / 1024)
    }

    /// One render of tenant B: its time, or why it failed.
    fn b_render(&self) -> Result<Duration, String> {
        let (path, body) = &self.b_render;
        let started = Instant::now();
        let answer = http(
            &self.addr,
            "POST",
            path,
            Some(&self.keys.b_viewer),
            &Body::Full(body.clone()),
        )?;
        let took = started.elapsed();
        if answer.status != 200 {
            return Err(format!(
                "tenant B's render answered {}: {}",
                answer.status,
                answer.text()
            ));
        }
        Ok(took)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A request body.
enum Body {
    Full(Vec<u8>),
    /// Sent in 64 KiB chunks with chunked framing.
    Chunked(Vec<u8>),
}

struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body)
            .chars()
            .take(2000)
            .collect()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// One request over a fresh connection (`Connection: close`). The body is written on its own
/// thread while the answer is read, as a client that is still sending would; an answer that
/// arrives before the body is all sent is fine, a reset before any answer is not.
fn http(
    addr: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: &Body,
) -> Result<Answer, String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    let (bytes, chunked) = match body {
        Body::Full(bytes) => (bytes.clone(), false),
        Body::Chunked(bytes) => (bytes.clone(), true),
    };
    if chunked {
        head.push_str("Transfer-Encoding: chunked\r\n");
    } else {
        head.push_str(&format!("Content-Length: {}\r\n", bytes.len()));
    }
    if let Some(key) = key {
        head.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    if !bytes.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    head.push_str("\r\n");
    let mut writer = stream.try_clone().map_err(|e| e.to_string())?;
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        writer.write_all(head.as_bytes())?;
        for piece in bytes.chunks(64 * 1024) {
            if chunked {
                writer.write_all(format!("{:x}\r\n", piece.len()).as_bytes())?;
                writer.write_all(piece)?;
                writer.write_all(b"\r\n")?;
            } else {
                writer.write_all(piece)?;
            }
        }
        if chunked {
            writer.write_all(b"0\r\n\r\n")?;
        }
        Ok(())
    });
    let mut raw = Vec::new();
    let read = stream.read_to_end(&mut raw);
    let _ = sender.join();
    if raw.is_empty() {
        return Err(format!("no answer: {read:?}"));
    }
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Err(format!(
            "an incomplete answer ({read:?}): {}",
            String::from_utf8_lossy(&raw)
        ));
    };
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head}"))?;
    let body = raw[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Ok(Answer {
            status,
            head,
            body: dechunk(&body),
        });
    }
    Ok(Answer { status, head, body })
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = raw.windows(2).position(|w| w == b"\r\n") {
        let Ok(size) = usize::from_str_radix(String::from_utf8_lossy(&raw[..end]).trim(), 16)
        else {
            break;
        };
        raw = &raw[end + 2..];
        if size == 0 || raw.len() < size {
            break;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[(size + 2).min(raw.len())..];
    }
    out
}

/// `value` as JSON, with `{version}` replaced in every string.
fn to_json(value: &toml::Value, version: &str) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s.replace("{version}", version)),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        toml::Value::Datetime(d) => json!(d.to_string()),
        toml::Value::Array(items) => {
            Value::Array(items.iter().map(|v| to_json(v, version)).collect())
        }
        toml::Value::Table(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), to_json(v, version)))
                .collect(),
        ),
    }
}

fn body_of(step: &Step, version: &str) -> Body {
    let bytes = match &step.json {
        Some(value) => serde_json::to_vec(&to_json(value, version)).unwrap(),
        None => {
            let mut out = step.prefix.clone().into_bytes();
            out.reserve(step.text.len() * step.repeat);
            let numbered = step.text.contains("{n}");
            for n in 0..step.repeat {
                if numbered {
                    out.extend_from_slice(step.text.replace("{n}", &n.to_string()).as_bytes());
                } else {
                    out.extend_from_slice(step.text.as_bytes());
                }
            }
            out.extend_from_slice(step.suffix.as_bytes());
            out
        }
    };
    if step.chunked {
        Body::Chunked(bytes)
    } else {
        Body::Full(bytes)
    }
}

/// Runs one step; returns its answer time.
fn run_step(server: &Server, step: &Step, version: &mut String) -> Result<Duration, String> {
    let path = step.path.replace("{version}", version);
    let started = Instant::now();
    let answer = http(
        &server.addr,
        &step.method,
        &path,
        server.key(&step.who),
        &body_of(step, version),
    )
    .map_err(|e| format!("{} {path}: {e}", step.method))?;
    let took = started.elapsed();
    if answer.status != step.status {
        return Err(format!(
            "{} {path}: status {}, expected {}: {}",
            step.method,
            answer.status,
            step.status,
            answer.text()
        ));
    }
    if answer.status >= 400 {
        if !answer
            .head
            .to_ascii_lowercase()
            .contains("content-type: application/problem+json")
        {
            return Err(format!(
                "{} {path}: not a problem+json answer: {}",
                step.method, answer.head
            ));
        }
        let problem = answer.json();
        if problem["status"] != json!(answer.status) {
            return Err(format!(
                "{} {path}: the problem's status differs: {problem}",
                step.method
            ));
        }
        if let Some(expected) = &step.problem {
            let kind = problem["type"].as_str().unwrap_or_default();
            if !kind.ends_with(&format!("/{expected}")) {
                return Err(format!(
                    "{} {path}: problem {kind}, expected {expected}",
                    step.method
                ));
            }
        }
    }
    if let Some(id) = answer.json()["version"]["id"].as_str() {
        *version = id.to_owned();
    }
    Ok(took)
}

/// Background load, stopped and joined when dropped.
struct Running {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// The status (0: no answer) and time of each answer to a `requests` load.
    answers: Arc<Mutex<Vec<(u16, Duration)>>>,
}

impl Running {
    /// Stops the load and returns its answers.
    fn finish(mut self) -> Vec<(u16, Duration)> {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        std::mem::take(&mut *self.answers.lock().unwrap())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn start_load(server: &Server, load: &Load, version: &str) -> Running {
    let stop = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    let addr = server.addr.clone();
    match load.kind.as_str() {
        "half-open" | "slow-body" | "cite-streams" => {
            // One thread holds every connection and feeds them now and then.
            let key = server.keys.a_viewer.clone();
            let kind = load.kind.clone();
            let count = load.connections;
            let stop = Arc::clone(&stop);
            let (ready, opened) = std::sync::mpsc::channel();
            threads.push(std::thread::spawn(move || {
                let mut held = Vec::new();
                for _ in 0..count {
                    let Ok(mut c) = TcpStream::connect(&addr) else { break };
                    let head = match kind.as_str() {
                        "half-open" => "POST /v1/agents/chat-assistant/render HTTP/1.1\r\nHost: x\r\nAuthori"
                            .to_owned(),
                        "slow-body" => format!(
                            "POST /v1/agents/chat-assistant/render HTTP/1.1\r\nHost: x\r\n\
                             Authorization: Bearer {key}\r\nContent-Type: application/json\r\n\
                             Content-Length: 100000\r\n\r\n{{"
                        ),
                        _ => format!(
                            "POST /v1/cite HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
                             Transfer-Encoding: chunked\r\n\r\n1d\r\n{{\"sources\": {{\"sources\": []}}}}\n\r\n"
                        ),
                    };
                    if c.write_all(head.as_bytes()).is_err() {
                        continue;
                    }
                    // A stream counts once the server has answered its head (it then holds
                    // one of the server's stream permits).
                    if kind == "cite-streams" {
                        let _ = c.set_read_timeout(Some(Duration::from_secs(30)));
                        let mut status = [0u8; 12];
                        let _ = c.read_exact(&mut status);
                    }
                    let _ = c.set_nonblocking(true);
                    held.push(c);
                }
                let _ = ready.send(());
                let mut drain = vec![0u8; 64 * 1024];
                while !stop.load(Ordering::Relaxed) {
                    for c in &mut held {
                        let _ = match kind.as_str() {
                            "slow-body" => c.write(b" "),
                            "cite-streams" => {
                                let piece = "the model says [1] something $x^2$ ";
                                let _ = c.read(&mut drain);
                                c.write(format!("{:x}\r\n{piece}\r\n", piece.len()).as_bytes())
                            }
                            _ => Ok(0),
                        };
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }));
            // Every connection is open (and every stream answered) before anything is measured.
            let _ = opened.recv_timeout(Duration::from_secs(60));
        }
        "requests" => {
            let step = load
                .request
                .clone()
                .expect("a `requests` load needs a `request`");
            for _ in 0..load.connections {
                let stop = Arc::clone(&stop);
                let addr = addr.clone();
                let key = server.key(&step.who).map(str::to_owned);
                let body = body_of(&step, version);
                let bytes = match body {
                    Body::Full(b) | Body::Chunked(b) => b,
                };
                let path = step.path.replace("{version}", version);
                let method = step.method.clone();
                let answers = Arc::clone(&answers);
                threads.push(std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let started = Instant::now();
                        let status = http(
                            &addr,
                            &method,
                            &path,
                            key.as_deref(),
                            &Body::Full(bytes.clone()),
                        )
                        .map_or(0, |a| a.status);
                        answers.lock().unwrap().push((status, started.elapsed()));
                    }
                }));
            }
        }
        other => panic!("unknown load `{other}`"),
    }
    Running {
        stop,
        threads,
        answers,
    }
}

/// What one case measured.
struct Figures {
    worst: Duration,
    peak_mib: Option<u64>,
    b_times: Vec<Duration>,
    /// How many answers of each status the load's requests got.
    load_statuses: BTreeMap<u16, usize>,
}

fn p99(times: &[Duration]) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64) * 0.99).ceil() as usize;
    sorted[at.clamp(1, sorted.len()) - 1]
}

fn check(server: &mut Server, case: &Case) -> Result<Figures, String> {
    server.reset_peak();
    let mut version = String::new();
    let mut worst = Duration::ZERO;
    let mut b_times = Vec::new();
    let mut problems = Vec::new();
    let mut run = |steps: &[Step], version: &mut String| {
        for step in steps {
            match run_step(server, step, version) {
                Ok(took) => worst = worst.max(took),
                Err(e) => problems.push(e),
            }
        }
    };
    run(&case.setup, &mut version);
    let running = case.load.as_ref().map(|load| {
        let running = start_load(server, load, &version);
        // Let the load take hold.
        std::thread::sleep(Duration::from_millis(500));
        running
    });
    run(&case.requests, &mut version);
    let measure_for = case
        .load
        .as_ref()
        .map_or(Duration::ZERO, |load| Duration::from_secs(load.seconds));
    let until = Instant::now() + measure_for;
    loop {
        match server.b_render() {
            Ok(took) => b_times.push(took),
            Err(e) => problems.push(e),
        }
        if Instant::now() >= until && b_times.len() >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut load_statuses = BTreeMap::new();
    if let (Some(running), Some(load)) = (running, &case.load) {
        let expected = load.request.as_ref().map_or(200, |r| r.status);
        for (status, took) in running.finish() {
            *load_statuses.entry(status).or_insert(0) += 1;
            worst = worst.max(took);
            // The load's own requests may be told to wait (429); nothing else.
            if status != expected && status != 429 {
                problems.push(format!(
                    "a request of the load answered {}",
                    if status == 0 {
                        "nothing".to_owned()
                    } else {
                        status.to_string()
                    }
                ));
            }
        }
    }
    problems.dedup();
    let peak_mib = server.peak_mib();
    if let Err(e) = server.alive() {
        problems.push(e);
    } else {
        match http(
            &server.addr,
            "GET",
            "/healthz",
            None,
            &Body::Full(Vec::new()),
        ) {
            Ok(answer) if answer.status == 200 => {}
            Ok(answer) => problems.push(format!("/healthz answered {}", answer.status)),
            Err(e) => problems.push(format!("/healthz: {e}")),
        }
    }
    if let Some(slow) = b_times.iter().find(|t| **t > B_BOUND) {
        problems.push(format!(
            "tenant B waited {} ms for a render (bound {} ms)",
            slow.as_millis(),
            B_BOUND.as_millis()
        ));
    }
    if problems.is_empty() {
        Ok(Figures {
            worst,
            peak_mib,
            b_times,
            load_statuses,
        })
    } else {
        Err(problems.join("; "))
    }
}

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile-server")
}

/// Every case file, by class (folder) and name.
fn file_cases() -> BTreeMap<String, Vec<(String, Case)>> {
    let mut classes = BTreeMap::new();
    for class in std::fs::read_dir(suite_dir()).unwrap().flatten() {
        if !class.path().is_dir() {
            continue;
        }
        let class_name = class.file_name().to_string_lossy().into_owned();
        for file in std::fs::read_dir(class.path()).unwrap().flatten() {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "toml") {
                let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                let case: Case = toml::from_str(&std::fs::read_to_string(&path).unwrap())
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                classes
                    .entry(class_name.clone())
                    .or_insert_with(Vec::new)
                    .push((name, case));
            }
        }
    }
    for cases in classes.values_mut() {
        cases.sort_by(|a, b| a.0.cmp(&b.0));
    }
    classes
}

/// A case of the command line's template suite, as the server sees it.
#[derive(Debug, Deserialize)]
struct CliCase {
    about: String,
    args: Vec<String>,
    #[serde(default)]
    setup: Vec<crate::hostile::Setup>,
    exit: i32,
}

/// Every template case of the command line's suite whose only argument is the spec: its spec is
/// published by tenant A's editor and, when the command line refuses it only when rendering,
/// rendered by id. Exit 2 (refused when compiled) must be a 422 on publish; exit 1 (the render
/// fails) a 201 and then a 422 on render; exit 0 a 201 and a 200. A spec larger than the body
/// limit must be a 413 on publish.
fn template_cases() -> Vec<(String, Case)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile/templates");
    let mut cases = Vec::new();
    for file in std::fs::read_dir(&dir).unwrap().flatten() {
        let path = file.path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let cli: CliCase = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        // Cases that change the command's own limits do not apply to a running server.
        if cli.args.len() != 4 || cli.args[0] != "render" || cli.args[2] != "--send" {
            continue;
        }
        let spec = if cli.args[1] == "{tmp}/agent.toml" {
            let Some(setup) = cli
                .setup
                .iter()
                .find(|s| s.file.as_deref() == Some("agent.toml"))
            else {
                continue;
            };
            format!(
                "{}{}{}",
                setup.prefix,
                setup.text.repeat(setup.repeat),
                setup.suffix
            )
        } else if let Some(data) = cli.args[1].strip_prefix("{case}/") {
            std::fs::read_to_string(dir.join(data)).unwrap()
        } else {
            continue;
        };
        let send: Value =
            serde_json::from_slice(&std::fs::read(root().join(&cli.args[3])).unwrap()).unwrap();
        // A spec larger than the body limit never reaches the engine.
        let too_large = serde_json::to_vec(&json!({"spec": spec})).unwrap().len() > BODY_LIMIT;
        let publish = Step {
            who: a_editor(),
            method: post(),
            path: "/v1/agents/hostile-template/versions".to_owned(),
            json: Some(toml::Value::try_from(json!({"spec": spec})).unwrap()),
            status: match (too_large, cli.exit) {
                (true, _) => 413,
                (false, 2) => 422,
                _ => 201,
            },
            repeat: 1,
            ..Step::default()
        };
        let mut requests = vec![publish];
        if cli.exit != 2 && !too_large {
            requests.push(Step {
                who: "a-viewer".to_owned(),
                method: post(),
                path: "/v1/agents/hostile-template/render".to_owned(),
                json: Some(
                    toml::Value::try_from(json!({"ref": "{version}", "send": send})).unwrap(),
                ),
                status: if cli.exit == 1 { 422 } else { 200 },
                problem: (cli.exit == 1).then(|| "render-failed".to_owned()),
                repeat: 1,
                ..Step::default()
            });
        }
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        cases.push((
            name,
            Case {
                about: cli.about,
                setup: Vec::new(),
                requests,
                load: None,
            },
        ));
    }
    cases.sort_by(|a, b| a.0.cmp(&b.0));
    cases
}

#[test]
fn the_server_survives_hostile_input_and_keeps_serving_tenant_b() {
    let mut classes = file_cases();
    classes.insert("templates".to_owned(), template_cases());
    assert!(
        classes.len() >= 6 && classes["templates"].len() >= 20,
        "the hostile server cases must be found"
    );
    let failures = Mutex::new(Vec::new());
    let mut total = 0;
    // The test harness prints the test's name without a newline before running it; the figures
    // start on a line of their own, where scripts/hostile-report finds them.
    eprintln!();
    for (class, cases) in classes.iter().filter(|(class, _)| wanted(class)) {
        // A server per class: a class that brings it down does not hide the others.
        let mut server = Server::start();
        for (name, case) in cases {
            total += 1;
            let label = format!("{class}__{name}");
            match check(&mut server, case) {
                Ok(figures) => eprintln!(
                    "server:{label}: {:.2} s, peak {}, b-p99 {} ms{}",
                    figures.worst.as_secs_f64(),
                    figures
                        .peak_mib
                        .map_or_else(|| "not measured".to_owned(), |m| format!("{m} MiB")),
                    p99(&figures.b_times).as_millis(),
                    if figures.load_statuses.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", load answers {}",
                            figures
                                .load_statuses
                                .iter()
                                .map(|(s, n)| format!("{s}×{n}"))
                                .collect::<Vec<_>>()
                                .join(" ")
                        )
                    }
                ),
                Err(e) => {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{label} ({}): {e}", case.about));
                    if server.alive().is_err() {
                        server = Server::start();
                    }
                }
            }
        }
    }
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {total} hostile server cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
