//! `promptstack bench`: time the assembly of one send, warm and volatile-only, and composition;
//! with `--cold`, also with every cache of the agent empty.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use promptstack::SendContext;
use serde::Serialize;

use crate::input;

/// Time the assembly of one send in this process, after a warm-up.
///
/// Three figures: "warm" assembles with every block rendered (nothing reused from earlier sends;
/// compiled templates and token counts are warm; the first send of a new thread); "volatile-only"
/// is the next send of the same thread, where only the clock moved, so the stable half is reused;
/// "compose" composes every target of one assembly.
///
/// With `--cold`, two more, each after emptying every cache of the agent (stable parts, volatile
/// units, MCP listings, tool units, token counts; the compiled templates and the loaded
/// vocabulary stay) and dropping the digests the send keeps, as a send just read has none:
/// "cold" assembles and takes the fingerprint, as a send that asks for no token counts does;
/// "cold-counted" also counts every block's tokens.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent spec (TOML, or JSON if the name ends in .json).
    spec: PathBuf,
    /// The send context (JSON).
    #[arg(long)]
    send: PathBuf,
    /// Timed iterations per figure.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u32).range(1..=i64::from(promptstack::limits::BENCH_ITERATIONS_MAX)))]
    iterations: u32,
    /// Also time assemblies with every cache of the agent empty ("cold", "cold-counted").
    #[arg(long)]
    cold: bool,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Figure {
    name: &'static str,
    iterations: u32,
    median_ns: u64,
    p90_ns: u64,
    min_ns: u64,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let agent = input::agent(&args.spec)?;
    let send = input::send(&args.send, &agent)?;
    let targets: Vec<String> = agent.target_ids().map(str::to_owned).collect();
    let assembly = agent.assemble(&send).context("assembly failed")?;
    let compose_all = |assembly: &promptstack::Assembly| -> anyhow::Result<()> {
        for target in &targets {
            std::hint::black_box(assembly.compose(target).context("compose failed")?);
        }
        Ok(())
    };
    compose_all(&assembly)?;
    let warmup = (args.iterations / 10).clamp(10, 1000);
    for _ in 0..warmup {
        std::hint::black_box(agent.assemble_fresh(&send)?);
    }
    let warm = time(args.iterations, |_| {
        std::hint::black_box(agent.assemble_fresh(&send)?);
        Ok(())
    })?;
    // The next sends of the same thread: only the clock moves, a minute at a time.
    let sends: Vec<SendContext> = (0..args.iterations.min(512))
        .map(|i| {
            let mut next = send.clone();
            let later =
                send.now.timestamp() + jiff::SignedDuration::from_secs(60 * (i64::from(i) + 1));
            next.now = promptstack::context::Now::new(later, send.now.offset());
            next
        })
        .collect();
    for next in &sends {
        std::hint::black_box(agent.assemble(next)?);
    }
    let volatile = time(args.iterations, |i| {
        std::hint::black_box(agent.assemble(&sends[i % sends.len()])?);
        Ok(())
    })?;
    let compose = time(args.iterations, |_| compose_all(&assembly))?;
    let mut figures = vec![
        figure("warm", args.iterations, warm),
        figure("volatile-only", args.iterations, volatile),
        figure("compose", args.iterations, compose),
    ];
    if args.cold {
        // The send keeps the digests of its large facts once keyed; a cold send is one just
        // read, so they are dropped before each assembly (and the time for that is counted).
        let mut cold_send = send.clone();
        let mut cold = |count: bool| {
            time(args.iterations, |_| {
                agent.clear_caches();
                cold_send.forget_digests();
                let assembly = agent.assemble(&cold_send)?;
                std::hint::black_box(assembly.fingerprint());
                if count {
                    for block in assembly.blocks() {
                        std::hint::black_box(block.tokens());
                    }
                }
                Ok(())
            })
        };
        figures.push(figure("cold", args.iterations, cold(false)?));
        figures.push(figure("cold-counted", args.iterations, cold(true)?));
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&figures)?);
    } else {
        println!(
            "{} × {} iterations (compose: {} target(s))",
            args.spec.display(),
            args.iterations,
            targets.len()
        );
        for f in &figures {
            println!(
                "{:<14} median {:>9} ns   p90 {:>9} ns   min {:>9} ns",
                f.name, f.median_ns, f.p90_ns, f.min_ns
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn time(
    iterations: u32,
    mut f: impl FnMut(usize) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<u64>> {
    let mut samples = Vec::with_capacity(iterations as usize);
    for i in 0..iterations as usize {
        let start = Instant::now();
        f(i)?;
        samples.push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX));
    }
    Ok(samples)
}

fn figure(name: &'static str, iterations: u32, mut samples: Vec<u64>) -> Figure {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize];
    Figure {
        name,
        iterations,
        median_ns: at(0.5),
        p90_ns: at(0.9),
        min_ns: samples[0],
    }
}
