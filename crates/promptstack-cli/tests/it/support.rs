//! What every end-to-end module shares: the workspace root and the binary run from it.

use std::path::{Path, PathBuf};
use std::process::Command;

use insta_cmd::get_cargo_bin;

/// The workspace root, so that paths in commands and snapshots are relative to it.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The binary, run from the workspace root.
pub fn promptstack() -> Command {
    let mut command = Command::new(get_cargo_bin("promptstack"));
    command.current_dir(root());
    command
}

/// A scripted model server on the loopback, for evals: every connection carries one HTTP/1.1
/// request whose JSON body `answer` turns into the body answered (an SSE stream), after
/// `delay`. At most `connections` connections are served, each on its own thread. Returns the
/// port and the number of requests answered so far.
pub fn model_server(
    answer: fn(&serde_json::Value) -> String,
    delay: std::time::Duration,
    connections: usize,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(connections).flatten() {
            let counted = Arc::clone(&counted);
            std::thread::spawn(move || {
                let _ = answer_one(stream, answer, delay, &counted);
            });
        }
    });
    (port, requests)
}

fn answer_one(
    stream: std::net::TcpStream,
    answer: fn(&serde_json::Value) -> String,
    delay: std::time::Duration,
    requests: &std::sync::atomic::AtomicUsize,
) -> std::io::Result<()> {
    use std::io::{BufRead as _, Read as _, Write as _};
    let mut reader = std::io::BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length.min(4 << 20)];
    reader.read_exact(&mut body)?;
    requests.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let request: serde_json::Value =
        serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    std::thread::sleep(delay);
    let answer = answer(&request);
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    )?;
    stream.flush()
}

/// Runs the binary with `args` and returns what it wrote, failing with its standard error unless
/// it succeeded.
pub fn succeeded(args: &[&str]) -> std::process::Output {
    succeeds(promptstack().args(args))
}

/// Runs `command` and returns what it wrote, failing with its arguments and standard error
/// unless it succeeded.
pub fn succeeds(command: &mut Command) -> std::process::Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{:?}: {}",
        command.get_args().collect::<Vec<_>>(),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs the binary with `args`, which must succeed, and reads its standard output as JSON.
pub fn json_output(args: &[&str]) -> serde_json::Value {
    serde_json::from_slice(&succeeded(args).stdout).unwrap()
}

/// A PostgreSQL database of its own for one test (at 127.0.0.1:5432, or the server
/// `PROMPTSTACK_TEST_POSTGRES` names), dropped in its own runtime when the guard is, after
/// whatever was declared after it (the servers using it).
pub struct TestDatabase {
    runtime: tokio::runtime::Runtime,
    database: Option<promptstack_store::testing::TempDatabase>,
}

impl TestDatabase {
    pub fn create() -> TestDatabase {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let database = runtime
            .block_on(promptstack_store::testing::TempDatabase::create())
            .expect("PostgreSQL at 127.0.0.1:5432 (or PROMPTSTACK_TEST_POSTGRES)");
        TestDatabase {
            runtime,
            database: Some(database),
        }
    }

    /// Its URL.
    pub fn url(&self) -> &str {
        self.database.as_ref().map_or("", |d| d.url())
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Some(database) = self.database.take() {
            self.runtime.block_on(async move { drop(database) });
        }
    }
}

/// Waits for `child`, a `promptstack serve` whose standard error is piped, to say where it
/// listens, and returns that address. The rest of its standard error is then read on a thread
/// of its own, so the server never blocks on a full pipe, and shown when it holds a panic or a
/// failed allocation.
pub fn listening(child: &mut std::process::Child) -> String {
    use std::io::{BufRead as _, Read as _};
    let mut stderr = std::io::BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut seen = String::new();
    let addr = loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("serve ended before listening: {seen}");
        }
        seen.push_str(&line);
        if let Some(addr) = line.trim().strip_prefix("listening on http://") {
            break addr.to_owned();
        }
    };
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = stderr.read_to_string(&mut rest);
        if rest.contains("panicked") || rest.contains("memory allocation") {
            eprintln!("server stderr: {rest}");
        }
    });
    addr
}
