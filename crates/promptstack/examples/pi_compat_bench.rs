//! The promptstack side of the pi-compat side-by-side benchmark (`examples/pi-compat/bench.sh`).
//!
//! For every parity case: checks that the assembly composes exactly the case's `expected.txt`,
//! then times two paths per call after a warm-up, and prints JSON:
//!
//! - `full_ns`: `clear_caches` + `assemble` + `compose`: a full assembly that reuses nothing from
//!   earlier calls (no stable part, no memoised volatile unit, no memoised token count, no digest
//!   kept in the send; the compiled spec stays, as the peer's loaded module does). The send keeps
//!   the digests of its facts (`context::Fact`) once keyed, so each call first drops them
//!   (`SendContext::forget_digests`, a few instructions, timed with the call): the stable
//!   key hashes every stable input, as for a send just read, and the send is one send, in cache,
//!   as a send just read is. Nothing asks for token counts or the fingerprint, so none are made
//!   (they are made on first request);
//! - `render_ns`: `assemble_fresh` + `compose`: every block rendered and the stable half joined
//!   again (a new thread's first send on a warm agent);
//! - `reuse_ns`: `assemble` + `compose` on a warm agent for the later sends of one thread: the
//!   clock moves a minute per send (512 distinct instants in turn), so the stable half is reused
//!   by its input key and the volatile date-and-cwd block is rendered again. The later sends are
//!   clones of the send after its first assembly, so, like a thread's send kept by an
//!   application and sent again, they keep its facts' digests: the key is made of lookups.
//!
//! Usage: `cargo run --release -p promptstack --example pi_compat_bench [-- --batches N --calls N]`
//!
//! `--example pi-compat-1.6` times the 1.6.0 reproduction (`examples/pi-compat-1.6`), whose
//! prompt has no date: there the later sends' clock changes nothing and reuse keeps every block.
//!
//! `--profile cold|new-thread|reuse CASE` runs only that path on that case (`--warmup` calls,
//! then `--calls` calls) and prints nothing, for a profiler such as
//! `valgrind --tool=callgrind --toggle-collect='pi_compat_bench::call'`, which then counts the
//! calls alone (not the setup, which clones every case's send 512 times).

use std::path::{Path, PathBuf};
use std::time::Instant;

use promptstack::{Agent, SendContext, SpecFormat};

/// What one timed call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `clear_caches`, then assemble: nothing reused from earlier calls.
    Full,
    /// `assemble_fresh`: every block rendered again.
    Render,
    /// `assemble` for a thread's later sends: the stable half reused.
    Reuse,
}

const MODES: [Mode; 3] = [Mode::Full, Mode::Render, Mode::Reuse];

/// The generated large case (`examples/pi-compat/peer/large.mjs`), reported on its own.
const LARGE_CASE: &str = "large";

fn flag(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

/// One timed call: what a profiler collects (`--toggle-collect='pi_compat_bench::call'`), apart
/// from the setup.
#[inline(never)]
fn call(agent: &Agent, send: &mut SendContext, mode: Mode) -> usize {
    let assembly = match mode {
        Mode::Full => {
            agent.clear_caches();
            send.forget_digests();
            agent.assemble(send).expect("assembles")
        }
        Mode::Render => agent.assemble_fresh(send).expect("assembles"),
        Mode::Reuse => agent.assemble(send).expect("assembles"),
    };
    let composed = assembly.compose("system").expect("composes");
    std::hint::black_box(composed.system.len())
}

/// The send of a mode's `i`th call: the case's send, or for reuse one of its later sends in turn.
fn pick<'a>(
    mode: Mode,
    send: &'a mut SendContext,
    later: &'a mut [SendContext],
    i: usize,
) -> &'a mut SendContext {
    if mode == Mode::Reuse {
        let at = i % later.len();
        &mut later[at]
    } else {
        send
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let batches = flag("--batches", 41);
    let calls = flag("--calls", 2000);
    let warmup = flag("--warmup", 5000);
    // `--example pi-compat-1.6` times the 1.6.0 reproduction instead.
    let example = {
        let args: Vec<String> = std::env::args().collect();
        match args.iter().position(|a| a == "--example") {
            Some(i) => args.get(i + 1).ok_or("--example needs a name")?.clone(),
            None => "pi-compat".to_owned(),
        }
    };
    if !matches!(example.as_str(), "pi-compat" | "pi-compat-1.6") {
        return Err(format!("--example must be pi-compat or pi-compat-1.6, not {example}").into());
    }
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(&example);
    let spec = std::fs::read(root.join("agent.toml"))?;
    let agent = Agent::from_source(
        &spec,
        &format!("examples/{example}/agent.toml"),
        SpecFormat::Toml,
    )?;
    let mut names: Vec<String> = std::fs::read_dir(root.join("cases"))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut cases = Vec::new();
    for name in names {
        let send_path = root.join("sends").join(format!("{name}.json"));
        let send = SendContext::from_json(&std::fs::read(&send_path)?, &name)?;
        // A 1.6 case whose context file is escaped renders its intended.txt (the peer's side
        // is timed on the escaped options, which give those bytes).
        let dir = root.join("cases").join(&name);
        let fixture = if dir.join("intended.txt").exists() {
            "intended.txt"
        } else {
            "expected.txt"
        };
        let expected = std::fs::read_to_string(dir.join(fixture))?;
        let got = agent.assemble(&send)?.compose("system")?.system;
        if got != expected {
            return Err(format!("{name}: the composed text differs from {fixture}").into());
        }
        // A thread's later sends: the same inputs, the clock a minute later each time.
        let later: Vec<SendContext> = (1..=512)
            .map(|i| {
                let mut next = send.clone();
                let at = send
                    .now
                    .timestamp()
                    .checked_add(std::time::Duration::from_secs(60 * i))
                    .expect("a minute later is a valid instant");
                next.now = promptstack::context::Now::new(at, send.now.offset());
                next
            })
            .collect();
        cases.push((name, send, later, expected.len()));
    }
    let run = |send: &mut SendContext, mode: Mode| call(&agent, send, mode);
    let mut sink = 0usize;
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--profile") {
        let mode = match args.get(i + 1).map(String::as_str) {
            Some("cold") => Mode::Full,
            Some("new-thread") => Mode::Render,
            Some("reuse") => Mode::Reuse,
            other => {
                return Err(
                    format!("--profile needs cold, new-thread or reuse, not {other:?}").into(),
                );
            }
        };
        let wanted = args.get(i + 2).ok_or("--profile needs a case name")?;
        let (_, send, later, _) = cases
            .iter_mut()
            .find(|c| &c.0 == wanted)
            .ok_or_else(|| format!("no such case: {wanted}"))?;
        for i in 0..warmup + calls {
            sink += run(pick(mode, send, later, i), mode);
        }
        std::hint::black_box(sink);
        return Ok(());
    }
    let mut results = Vec::new();
    for (name, send, later, bytes) in &mut cases {
        let mut figures = Vec::new();
        for mode in MODES {
            for i in 0..warmup {
                sink += run(pick(mode, send, later, i), mode);
            }
            let mut samples = Vec::with_capacity(batches);
            for _ in 0..batches {
                let start = Instant::now();
                for i in 0..calls {
                    sink += run(pick(mode, send, later, i), mode);
                }
                samples.push(start.elapsed().as_nanos() as f64 / calls as f64);
            }
            figures.push(median(samples).round() as u64);
        }
        results.push(serde_json::json!({
            "case": name, "bytes": bytes, "full_ns": figures[0], "render_ns": figures[1], "reuse_ns": figures[2],
        }));
    }
    // Overall: every fixture in turn, as a server handling many threads would; the generated
    // large case is timed on its own above and left out here.
    let mut fixtures: Vec<_> = cases.iter_mut().filter(|c| c.0 != LARGE_CASE).collect();
    let mut overall = Vec::new();
    for mode in MODES {
        let rounds = (calls / fixtures.len()).max(1);
        let mut samples = Vec::with_capacity(batches);
        for _ in 0..batches {
            let start = Instant::now();
            for r in 0..rounds {
                for (_, send, later, _) in fixtures.iter_mut() {
                    sink += run(pick(mode, send, later, r), mode);
                }
            }
            samples.push(start.elapsed().as_nanos() as f64 / (rounds * fixtures.len()) as f64);
        }
        overall.push(median(samples).round() as u64);
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::json!({
            "tool": "promptstack",
            "batches": batches,
            "calls": calls,
            "cases": results,
            "overall": { "full_ns": overall[0], "render_ns": overall[1], "reuse_ns": overall[2] },
            "sink": sink % 7,
        }))?
    );
    Ok(())
}
