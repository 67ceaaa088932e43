//! `promptstack eval`: run a suite's versions on its models over its scenarios, and report.

use std::collections::BTreeMap;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use promptstack::eval::HttpEndpoint;
use promptstack::provider::Format;
use promptstack_eval::endpoint::Endpoint;
use promptstack_eval::price::Prices;
use promptstack_eval::record::{Recording, Recordings, Replay};
use promptstack_eval::report::{Report, TerminalConfig};
use promptstack_eval::run::{Progress, RunOptions, Runner, VersionAgent};
use promptstack_eval::stats::StatsConfig;
use promptstack_eval::suite::{Assertion, Suite};

use crate::exit::bad_input;
use crate::input;

/// Run an eval suite: every version on every model over every scenario, each repetition its own
/// sample; score each answer with the suite's assertions and compare the versions.
///
/// The suite's paths are relative to the agent's folder: the folder holding `evals/` when the
/// suite is in an `evals/` folder, else the suite's own folder. Each scenario run is one turn:
/// the request `render --format` prints (plus `stream`, `temperature` and `seed`), the model's
/// tool calls answered by the scenario's scripted results through the agent's real turn
/// runtime (budgets, source numbering, the untrusted-content fence), at most `max_steps`
/// steps, and the final answer through the stream processor before the assertions read it.
///
/// The summary table goes to stdout (to stderr with `--json -`); a progress line goes to
/// stderr when it is a terminal. Exit codes: 0 the run completed (and met `fail_under` if one
/// is set), 1 the pass rate is under `fail_under` (or a report could not be written), 2 bad
/// input: a suite, spec or send that does not read, a version given as a `ref`, an unknown
/// `--scenario`/`--version`/`--model`, a model without its API key, and, with `--replay`, a
/// request that was never recorded. A model that answers with an error makes that run an
/// error row, which never passes; the run goes on.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The suite file (TOML, or JSON if the name ends in .json).
    suite: PathBuf,
    /// Run only this scenario (repeatable).
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// Run only this version (repeatable).
    #[arg(long = "version", value_name = "NAME")]
    versions: Vec<String>,
    /// Run only on this model (repeatable).
    #[arg(long = "model", value_name = "NAME")]
    models: Vec<String>,
    /// Repetitions of each scenario per version and model, instead of the suite's `repeats`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    repeats: Option<u32>,
    /// The target whose composition is sent (default: the spec's first target).
    #[arg(long, value_name = "ID")]
    target: Option<String>,
    /// Call the models and save every exchange in DIR, to replay later.
    #[arg(long, value_name = "DIR", conflicts_with = "replay")]
    record: Option<PathBuf>,
    /// Answer every request from the recordings in DIR, never calling a model; a request that
    /// was not recorded stops the run (exit 2).
    #[arg(long, value_name = "DIR")]
    replay: Option<PathBuf>,
    /// Write the JSON report to PATH (`-`: stdout).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write a JUnit XML report to PATH.
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Write a self-contained HTML report to PATH.
    #[arg(long, value_name = "PATH")]
    html: Option<PathBuf>,
    /// The lowest pass rate over the whole run (0 to 1) that exits 0, instead of the suite's
    /// `fail_under`.
    #[arg(long, value_name = "RATE", value_parser = rate)]
    fail_under: Option<f64>,
    /// The seed of the statistics' resampling (default: the suite's `seed`, else 0). The seed
    /// sent to models stays the suite's.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// A provider rules table (TOML) replacing the bundled one, for the requests' cache plans and
    /// the predicted cache reads.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// A price table (TOML) replacing the bundled one, for the rows' costs.
    #[arg(long, value_name = "FILE")]
    prices: Option<PathBuf>,
    /// Print neither the progress line nor the summary table.
    #[arg(long, short)]
    quiet: bool,
}

fn rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(rate) if (0.0..=1.0).contains(&rate) => Ok(rate),
        _ => Err(format!("`{text}` is not a rate from 0 to 1")),
    }
}

/// The agent's folder of a suite: the folder holding `evals/`, else the suite's own folder.
fn agent_folder(suite: &Path) -> PathBuf {
    let parent = match suite.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    if parent.file_name().is_some_and(|name| name == "evals") {
        match parent.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder.to_path_buf(),
            _ => PathBuf::from("."),
        }
    } else {
        parent.to_path_buf()
    }
}

/// The suite's name in reports: its file stem.
fn suite_name(path: &Path) -> String {
    path.file_stem()
        .map_or_else(|| "suite".to_owned(), |s| s.to_string_lossy().into_owned())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let folder = agent_folder(&args.suite);
    let bytes = input::read(&args.suite, promptstack::limits::InputKind::Spec)?;
    let exists = |path: &str| {
        promptstack::spec::check_relative_path(path).is_ok() && folder.join(path).is_file()
    };
    let suite =
        Suite::parse_for(&bytes, &args.suite.display().to_string(), exists).map_err(bad_input)?;

    let versions = load_versions(&suite, &folder, &args.versions)?;
    let endpoints = endpoints(&suite, &args)?;

    let progress = (!args.quiet && std::io::stderr().is_terminal()).then(ProgressLine::new);
    let options = RunOptions {
        scenarios: args.scenarios.clone(),
        versions: args.versions.clone(),
        models: args.models.clone(),
        repeats: args.repeats,
        target: args.target.clone(),
        progress: progress.clone().map(|line| {
            let callback: promptstack_eval::run::ProgressFn =
                Arc::new(move |p: &Progress<'_>| line.show(p));
            callback
        }),
    };
    let runner = Runner::new(
        &suite,
        &suite_name(&args.suite),
        &folder,
        versions,
        endpoints,
        options,
    )
    .map_err(bad_input)?
    .with_rules(super::request::rules(args.rules.as_deref())?)
    .with_prices(super::request::data_table(
        args.prices.as_deref(),
        Prices::from_toml,
        || Prices::bundled().clone(),
    )?);
    let started_at = jiff::Timestamp::now().to_string();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("the async runtime could not start")?;
    let outcome = runtime.block_on(runner.run());
    if let Some(line) = &progress {
        line.end();
    }
    // Every error that stops a run is one no other run would escape: a missing or unreadable
    // recording, a misconfigured endpoint. All are input to fix, not a model's failure.
    let run = outcome.map_err(bad_input)?;
    let run = run.with_started_at(started_at);

    let passed = run.rows.iter().filter(|r| r.passed).count();
    let total = run.rows.len();
    let config = StatsConfig::default()
        .with_confidence(suite.matrix.confidence)
        .with_seed(args.seed.or(suite.matrix.seed).unwrap_or(0));
    let report = Report::new(run, &config).context("the statistics could not be computed")?;

    if let Some(path) = &args.json {
        let json = report
            .to_json()
            .context("the JSON report could not be written")?;
        write_output(path, json.as_bytes())?;
    }
    if let Some(path) = &args.junit {
        write_output(path, report.to_junit_xml().as_bytes())?;
    }
    if let Some(path) = &args.html {
        write_output(path, report.to_html().as_bytes())?;
    }
    if !args.quiet {
        let table = report.to_terminal(&TerminalConfig::new(width()));
        if args.json.as_deref() == Some(Path::new("-")) {
            let _ = std::io::stderr().lock().write_all(table.as_bytes());
        } else {
            let mut out = std::io::stdout().lock();
            out.write_all(table.as_bytes())?;
            out.flush()?;
        }
    }

    let rate = if total == 0 {
        0.0
    } else {
        passed as f64 / total as f64
    };
    match args.fail_under.or(suite.fail_under) {
        Some(threshold) if rate < threshold => {
            eprintln!(
                "error: the pass rate {:.1}% ({passed} of {total} runs) is under fail_under {:.1}%",
                rate * 100.0,
                threshold * 100.0
            );
            Ok(ExitCode::from(1))
        }
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Loads every version the filter keeps; a `ref` version is refused (the service resolves refs).
fn load_versions(
    suite: &Suite,
    folder: &Path,
    filter: &[String],
) -> anyhow::Result<Vec<VersionAgent>> {
    let mut versions = Vec::new();
    for version in &suite.matrix.versions {
        if !filter.is_empty() && !filter.contains(&version.name) {
            continue;
        }
        match (&version.spec, &version.reference) {
            (Some(spec), _) => versions.push(VersionAgent {
                name: version.name.clone(),
                agent: input::agent(&folder.join(spec))
                    .with_context(|| format!("version `{}` ({spec})", version.name))?,
            }),
            (None, Some(reference)) => {
                return Err(bad_input(anyhow::anyhow!(
                    "version `{}` is `ref = \"{reference}\"`: a reference is resolved by the service, which this command does not call; give the version a `spec`, or leave it out with --version",
                    version.name
                )));
            }
            (None, None) => {
                return Err(bad_input(anyhow::anyhow!(
                    "version `{}` has neither `spec` nor `ref`",
                    version.name
                )));
            }
        }
    }
    Ok(versions)
}

/// One endpoint per model the filter keeps, and one per model a kept scenario names as a judge
/// (whatever the model filter): replayed, recorded, or live.
fn endpoints(suite: &Suite, args: &Args) -> anyhow::Result<BTreeMap<String, Arc<dyn Endpoint>>> {
    let judges = suite
        .scenarios
        .iter()
        .filter(|s| args.scenarios.is_empty() || args.scenarios.contains(&s.name))
        .flat_map(|s| &s.assertions)
        .filter_map(|a| match a {
            Assertion::Rubric { judge, .. } => Some(judge),
            _ => None,
        });
    let matrix = suite
        .matrix
        .models
        .iter()
        .filter(|name| args.models.is_empty() || args.models.contains(name));
    let mut endpoints = BTreeMap::new();
    for name in matrix.chain(judges) {
        if endpoints.contains_key(name) {
            continue;
        }
        let Some(model) = suite.models.get(name) else {
            continue;
        };
        let format = Format::from(model.format).as_str();
        let endpoint: Arc<dyn Endpoint> = match (&args.replay, &args.record) {
            (Some(dir), _) => Arc::new(Replay::new(
                Recordings::new(dir),
                format,
                model.model.clone(),
            )),
            (None, record) => {
                let live: Arc<dyn Endpoint> = Arc::new(
                    HttpEndpoint::new(model)
                        .map_err(|e| bad_input(anyhow::anyhow!("model `{name}`: {e}")))?,
                );
                match record {
                    Some(dir) => Arc::new(Recording::new(
                        live,
                        Recordings::new(dir),
                        format,
                        model.model.clone(),
                    )),
                    None => live,
                }
            }
        };
        endpoints.insert(name.clone(), endpoint);
    }
    Ok(endpoints)
}

/// Writes a report to a file, or to stdout for `-`.
fn write_output(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)?;
        out.write_all(b"\n")?;
        out.flush()?;
        return Ok(());
    }
    std::fs::write(path, bytes).with_context(|| format!("{} could not be written", path.display()))
}

/// The terminal's width: `COLUMNS` when it is a number, else 100.
fn width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(100)
}

/// The progress line on stderr: runs done of total, failures, errors, and the time left.
#[derive(Clone)]
struct ProgressLine {
    started: Instant,
    last: Arc<Mutex<Option<Instant>>>,
}

impl ProgressLine {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            last: Arc::new(Mutex::new(None)),
        }
    }

    fn show(&self, progress: &Progress<'_>) {
        let now = Instant::now();
        {
            // At most ten redraws a second, and always the last one.
            let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
            if progress.done < progress.total
                && last.is_some_and(|at| now.duration_since(at) < Duration::from_millis(100))
            {
                return;
            }
            *last = Some(now);
        }
        let elapsed = now.duration_since(self.started);
        let left = progress.total - progress.done;
        let eta = elapsed.mul_f64(left as f64 / progress.done.max(1) as f64);
        let line = format!(
            "\r{}/{} runs · {} failed ({} errors) · ETA {}\x1b[K",
            progress.done,
            progress.total,
            progress.failed,
            progress.errors,
            duration(eta)
        );
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn end(&self) {
        if self
            .last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            let _ = std::io::stderr().lock().write_all(b"\n");
        }
    }
}

/// `1h02m`, `3m05s`, `12s`.
fn duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_folder_holds_evals() {
        assert_eq!(
            agent_folder(Path::new("examples/a/evals/s.toml")),
            Path::new("examples/a")
        );
        assert_eq!(agent_folder(Path::new("evals/s.toml")), Path::new("."));
        assert_eq!(agent_folder(Path::new("s.toml")), Path::new("."));
        assert_eq!(agent_folder(Path::new("x/s.toml")), Path::new("x"));
    }

    #[test]
    fn durations_read_short() {
        assert_eq!(duration(Duration::from_secs(12)), "12s");
        assert_eq!(duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(duration(Duration::from_secs(3720)), "1h02m");
    }

    #[test]
    fn rates_are_fractions() {
        assert_eq!(rate("0.8"), Ok(0.8));
        assert!(rate("80").is_err());
        assert!(rate("nan").is_err());
    }
}
