//! `promptstack cite`: streams the model's text from stdin through the citation and math
//! processor to stdout.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use promptstack::stream::{OutputMode, Processor, SourceSnapshot, StreamConfig};

use crate::exit::bad_input;

/// Resolve citations and normalise math in model output read from stdin, streaming the result.
///
/// Output is written and flushed as each chunk of input is decided. With `--json`, stdout holds
/// JSON lines: `{"type":"text","text":"…"}` for each piece of output, then one final
/// `{"type":"map","citations":[{"key":1,"placeholder":"{{cite:1}}","sources":[1,2]}],"score":{…}}`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The sources snapshot: {"sources":[{"index":1,"url":"…","title":"…"}]}.
    #[arg(long, value_name = "SOURCES.json")]
    sources: PathBuf,
    /// How citation runs are written.
    #[arg(long, value_enum, default_value_t = Mode::Placeholders)]
    mode: Mode,
    /// Write JSON lines (text pieces, then the citation map) instead of plain text.
    #[arg(long)]
    json: bool,
}

/// How citation runs are written.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Mode {
    /// One {{cite:K}} placeholder per run, plus a citation map (see --json).
    Placeholders,
    /// Markdown links [[N]](url "title"), for plain Markdown renderers.
    Links,
}

/// Bytes read from stdin per step: small enough to stream, large enough to be cheap.
const CHUNK: usize = 8 * 1024;

/// Runs the command.
///
/// # Errors
///
/// Bad input (exit 2) when the sources file cannot be read or is not a valid snapshot; a
/// failure (exit 1) when stdin cannot be read or stdout cannot be written. A closed stdout ends
/// the command quietly.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let path = args.sources.display();
    let bytes = crate::input::read(&args.sources, promptstack::limits::InputKind::Sources)?;
    let sources: SourceSnapshot = serde_json::from_slice(&bytes)
        .map_err(|e| bad_input(anyhow::anyhow!("invalid sources file {path}: {e}")))?;
    let mode = match args.mode {
        Mode::Placeholders => OutputMode::Placeholders,
        Mode::Links => OutputMode::Links,
    };
    let mut processor = Processor::new(&sources, StreamConfig { mode });
    match stream(&mut processor, args.json) {
        Err(e) if is_broken_pipe(&e) => Ok(ExitCode::SUCCESS),
        result => result.map(|()| ExitCode::SUCCESS),
    }
}

fn stream(processor: &mut Processor, json: bool) -> anyhow::Result<()> {
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    let mut buf = vec![0u8; CHUNK];
    let mut out = String::new();
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("cannot read stdin"),
        };
        out.clear();
        if n == 0 {
            processor.finish_into(&mut out);
        } else {
            processor.push_bytes_into(&buf[..n], &mut out);
        }
        emit(&mut stdout, &out, json)?;
        if n == 0 {
            break;
        }
    }
    if json {
        let citations: Vec<_> = processor.citations().iter().collect();
        let map = Line::Map {
            citations,
            score: processor.score(),
        };
        writeln!(stdout, "{}", serde_json::to_string(&map)?).context("cannot write to stdout")?;
    }
    stdout.flush().context("cannot write to stdout")
}

fn emit(stdout: &mut impl Write, text: &str, json: bool) -> anyhow::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    if json {
        let line: Line<'_, (), ()> = Line::Text { text };
        let line = serde_json::to_string(&line).map_err(io::Error::other)?;
        writeln!(stdout, "{line}")
    } else {
        stdout.write_all(text.as_bytes())
    }
    .and_then(|()| stdout.flush())
    .context("cannot write to stdout")
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<io::Error>()
        .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
}

/// One line of JSON-mode output; `type` comes first so a reader can dispatch before parsing on.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line<'a, C: serde::Serialize, S: serde::Serialize> {
    /// A piece of display-ready text.
    Text { text: &'a str },
    /// The citation map and score, once, at the end.
    Map { citations: Vec<C>, score: S },
}
