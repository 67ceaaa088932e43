//! The hostile-input suite: every case under `tests/hostile/` (see its README) runs the real
//! binary under an address-space limit (`prlimit --as`) and a kill timeout, and must end on its
//! own with the expected exit code, the expected (located) messages, no raw control character in
//! anything it printed, and no panic or allocation failure. Each case's output is snapshotted.
//!
//! When `/usr/bin/time` is installed, each case's peak resident memory and wall time are printed
//! (run with `--nocapture` to see them); they are figures to read, never asserted.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use insta_cmd::get_cargo_bin;
use serde::Deserialize;

use crate::support::root;

/// One case: what to set up, what to run, what must come out.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    /// What the case shows, in one sentence.
    about: String,
    /// The arguments of `promptstack`, with placeholders (see the README).
    args: Vec<String>,
    /// Files, folders, FIFOs and symlinks created in the case's scratch folder first.
    #[serde(default)]
    setup: Vec<Setup>,
    /// A file (or device) given as stdin; stdin is empty otherwise.
    stdin: Option<String>,
    /// The expected exit code.
    exit: i32,
    /// Texts stderr must contain (the location of the problem, at least).
    #[serde(default)]
    stderr: Vec<String>,
    /// Texts stdout must contain.
    #[serde(default)]
    stdout: Vec<String>,
    /// Texts neither stream may contain.
    #[serde(default)]
    absent: Vec<String>,
    /// The address-space limit, in MiB.
    #[serde(default = "default_memory_mib")]
    memory_mib: u64,
    /// The kill timeout, in seconds.
    #[serde(default = "default_seconds")]
    seconds: u64,
}

fn default_memory_mib() -> u64 {
    512
}

fn default_seconds() -> u64 {
    60
}

/// One thing to create before running; exactly one of `fifo`, `dir`, `symlink`, `file`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Setup {
    /// A FIFO at this path (relative to the scratch folder).
    fifo: Option<String>,
    /// A folder.
    dir: Option<String>,
    /// A symlink at this path, pointing at `target`.
    symlink: Option<String>,
    /// A regular file: `copy` of another file, or `prefix`, `text` × `repeat`, `suffix`.
    pub(crate) file: Option<String>,
    target: Option<String>,
    copy: Option<String>,
    #[serde(default)]
    pub(crate) prefix: String,
    #[serde(default)]
    pub(crate) text: String,
    #[serde(default = "one")]
    pub(crate) repeat: usize,
    #[serde(default)]
    pub(crate) suffix: String,
}

fn one() -> usize {
    1
}

fn hostile_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile")
}

/// Every case file, by class (folder) and name.
fn cases() -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    for class in std::fs::read_dir(hostile_dir()).unwrap().flatten() {
        if !class.path().is_dir() || class.file_name() == "snapshots" {
            continue;
        }
        for case in std::fs::read_dir(class.path()).unwrap().flatten() {
            let path = case.path();
            if path.extension().is_some_and(|e| e == "toml") {
                let name = format!(
                    "{}__{}",
                    class.file_name().to_string_lossy(),
                    path.file_stem().unwrap().to_string_lossy()
                );
                found.push((name, path));
            }
        }
    }
    found.sort();
    found
}

/// The placeholders of case files and their values.
struct Places {
    values: BTreeMap<&'static str, String>,
}

impl Places {
    fn new(tmp: &Path, case_dir: &Path) -> Self {
        let mut values = BTreeMap::new();
        values.insert("{root}", root().display().to_string());
        values.insert("{tmp}", tmp.display().to_string());
        values.insert("{case}", case_dir.display().to_string());
        values.insert(
            "{mcp}",
            root()
                .join("crates/promptstack/tests/mcp")
                .display()
                .to_string(),
        );
        Self { values }
    }

    fn expand(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (key, value) in &self.values {
            out = out.replace(key, value);
        }
        out
    }

    /// The output with the machine's paths put back as placeholders, for snapshots.
    fn fold(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for key in ["{tmp}", "{case}", "{mcp}", "{root}"] {
            out = out.replace(&self.values[key], key);
        }
        out
    }
}

fn set_up(setup: &Setup, tmp: &Path, places: &Places) {
    let at = |p: &str| tmp.join(places.expand(p));
    match (&setup.fifo, &setup.dir, &setup.symlink, &setup.file) {
        (Some(fifo), None, None, None) => {
            let status = Command::new("mkfifo").arg(at(fifo)).status().unwrap();
            assert!(status.success(), "mkfifo {fifo} failed");
        }
        (None, Some(dir), None, None) => std::fs::create_dir_all(at(dir)).unwrap(),
        (None, None, Some(link), None) => {
            let target = places.expand(setup.target.as_deref().expect("a symlink needs a target"));
            std::os::unix::fs::symlink(target, at(link)).unwrap();
        }
        (None, None, None, Some(file)) => {
            let bytes = match &setup.copy {
                Some(from) => std::fs::read(places.expand(from)).unwrap(),
                None => {
                    let text = places.expand(&setup.text);
                    let mut out = places.expand(&setup.prefix).into_bytes();
                    out.reserve(text.len() * setup.repeat);
                    for _ in 0..setup.repeat {
                        out.extend_from_slice(text.as_bytes());
                    }
                    out.extend_from_slice(places.expand(&setup.suffix).as_bytes());
                    out
                }
            };
            std::fs::write(at(file), bytes).unwrap();
        }
        _ => panic!("a setup step is exactly one of fifo, dir, symlink, file: {setup:?}"),
    }
}

/// How much of each stream a run keeps.
const KEPT_BYTES: usize = 4 * 1024 * 1024;

/// Reads a stream to its end on its own thread, keeping at most [`KEPT_BYTES`] of it (the rest is
/// read and dropped, so the binary never writes into a closed pipe).
fn drain(mut stream: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut stream).take(KEPT_BYTES as u64).read_to_end(&mut kept);
        let _ = std::io::copy(&mut stream, &mut std::io::sink());
        kept
    })
}

/// What one run produced.
struct Run {
    code: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    /// Peak resident memory in KiB, when `/usr/bin/time` measured it.
    peak_kib: Option<u64>,
}

fn run(case: &Case, tmp: &Path, places: &Places) -> Run {
    let time = Path::new("/usr/bin/time");
    let timing = tmp.join(".time");
    let mut command = Command::new("prlimit");
    // The soft limit binds the binary; the hard one stays open so that a case's MCP server
    // (a Node process, which reserves far more address space) can lift it for itself.
    command.arg(format!("--as={}:unlimited", case.memory_mib * 1024 * 1024));
    command.arg("--");
    if time.exists() {
        command.arg(time).arg("-o").arg(&timing).arg("-f").arg("%M");
    }
    command
        .arg(get_cargo_bin("promptstack"))
        .args(case.args.iter().map(|a| places.expand(a)))
        .current_dir(root())
        // glibc reserves 64 MiB of address space per malloc arena; two keep the limit about
        // memory actually used.
        .env("MALLOC_ARENA_MAX", "2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match &case.stdin {
        Some(path) => command.stdin(std::fs::File::open(places.expand(path)).unwrap()),
        None => command.stdin(Stdio::null()),
    };
    let start = Instant::now();
    let mut child = command
        .spawn()
        .expect("prlimit (util-linux) must be installed");
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let deadline = start + Duration::from_secs(case.seconds);
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break (status, false);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break (child.wait().unwrap(), true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    let peak_kib = std::fs::read_to_string(&timing)
        .ok()
        .and_then(|t| t.lines().last()?.trim().parse().ok());
    let stderr = String::from_utf8_lossy(&stderr.join().unwrap()).into_owned();
    // `time` reports a signal or a non-zero exit on stderr of its own only with -o; the child's
    // code is passed through.
    Run {
        code: status.code(),
        timed_out,
        stdout: String::from_utf8_lossy(&stdout.join().unwrap()).into_owned(),
        stderr,
        elapsed,
        peak_kib,
    }
}

/// Characters that must never reach a terminal raw.
fn raw_control(text: &str) -> Option<char> {
    text.chars().find(|&c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
    })
}

/// The first lines of a stream, each cut after 1000 bytes, for a snapshot of readable size. A
/// stream cut at [`KEPT_BYTES`]
/// says so instead of counting the lines kept, because that count depends on the length of the
/// paths in them, i.e. on where the repository is checked out.
fn head(text: &str) -> String {
    const LINES: usize = 40;
    /// A request body is one long line; the snapshot keeps its start.
    const LINE_BYTES: usize = 1000;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines
        .iter()
        .take(LINES)
        .map(|line| {
            if line.len() <= LINE_BYTES {
                return (*line).to_owned();
            }
            let mut cut = LINE_BYTES;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            format!(
                "{}… ({} more bytes on this line)",
                &line[..cut],
                line.len() - cut
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    if text.len() >= KEPT_BYTES {
        out.push_str(&format!(
            "\n… (more lines; the output ran past {KEPT_BYTES} bytes)"
        ));
    } else if lines.len() > LINES {
        out.push_str(&format!("\n… ({} more lines)", lines.len() - LINES));
    }
    out
}

fn check(name: &str, path: &Path) -> Result<String, String> {
    let case: Case = toml::from_str(&std::fs::read_to_string(path).unwrap())
        .map_err(|e| format!("{name}: invalid case file: {e}"))?;
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hostile")
        .join(name);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    // Resolved, as the messages about symlinks show real paths.
    let tmp = tmp.canonicalize().unwrap();
    let places = Places::new(&tmp, path.parent().unwrap());
    for setup in &case.setup {
        set_up(setup, &tmp, &places);
    }
    let run = run(&case, &tmp, &places);
    let figures = format!(
        "{name}: {:.2} s, peak {}",
        run.elapsed.as_secs_f64(),
        run.peak_kib.map_or_else(
            || "not measured".to_owned(),
            |k| format!("{} MiB", k / 1024)
        )
    );
    let mut problems = Vec::new();
    if run.timed_out {
        problems.push(format!("killed after {} s", case.seconds));
    }
    match run.code {
        None if !run.timed_out => problems.push(format!(
            "ended by a signal (over {} MiB of address space, or a crash)",
            case.memory_mib
        )),
        Some(code) if code != case.exit => {
            problems.push(format!("exit code {code}, expected {}", case.exit))
        }
        _ => {}
    }
    for (stream, text, wanted) in [
        ("stderr", &run.stderr, &case.stderr),
        ("stdout", &run.stdout, &case.stdout),
    ] {
        for want in wanted {
            let want = places.expand(want);
            if !text.contains(&want) {
                problems.push(format!("{stream} lacks {want:?}"));
            }
        }
        if let Some(c) = raw_control(text) {
            problems.push(format!("{stream} holds the raw control character {c:?}"));
        }
    }
    for bad in case
        .absent
        .iter()
        .chain(&["panicked".to_owned(), "memory allocation".to_owned()])
    {
        let bad = places.expand(bad);
        if run.stdout.contains(&bad) || run.stderr.contains(&bad) {
            problems.push(format!("the output holds {bad:?}"));
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    if !problems.is_empty() {
        return Err(format!(
            "{name} ({}): {}\n--- stderr\n{}",
            case.about,
            problems.join("; "),
            head(&run.stderr)
        ));
    }
    let snapshot = format!(
        "exit: {}\n--- stdout\n{}\n--- stderr\n{}\n",
        case.exit,
        places.fold(&head(&run.stdout)),
        places.fold(&head(&run.stderr))
    );
    insta::with_settings!({
        snapshot_path => hostile_dir().join("snapshots"),
        prepend_module_to_snapshot => false,
        description => case.about.clone(),
        omit_expression => true,
    }, {
        insta::assert_snapshot!(name.to_owned(), snapshot);
    });
    Ok(figures)
}

#[test]
fn hostile_inputs_end_cleanly_within_their_limits() {
    let cases = cases();
    assert!(cases.len() >= 30, "the hostile cases must be found");
    let mut failures = Vec::new();
    // The test harness prints the test's name without a newline before running it; the figures
    // start on a line of their own, where scripts/hostile-report finds them.
    eprintln!();
    for (name, path) in &cases {
        match check(name, path) {
            Ok(figures) => eprintln!("{figures}"),
            Err(failure) => failures.push(failure),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} hostile cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
