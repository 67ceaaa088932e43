//! `promptstack cite`: streams the model's text from stdin through the citation and math
//! processor to stdout.

use std::io::{self, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use promptstack::command::{self, CiteMode, CiteRequest};
use promptstack::limits::Limit;
use promptstack::stream::{CitationMap, Overflow, OverflowKind, Processor, SourceSnapshot};

use crate::exit::bad_input;

/// Resolve citations and normalise math in model output read from stdin, streaming the result.
///
/// Output is written and flushed as each chunk of input is decided. With `--json`, stdout holds
/// JSON lines: `{"type":"text","text":"…"}` for each piece of output, then one final
/// `{"type":"map","citations":[{"key":1,"placeholder":"{{cite:1}}","sources":[1,2]}],"score":{…}}`.
/// With `--widgets`, each widget tag removed from the text becomes a line
/// `{"type":"widget","name":"chart","attributes":{"kind":"bar"},"offset":12}` after the text line
/// of the same chunk (`offset` is the byte offset in the concatenated text where it stood). A
/// line `{"type":"widget_start","name":"chart","offset":12}` comes first, as soon as a declared
/// name is complete and followed by a space, a tab or `/` (the widget is loading); a tag that then
/// turns out not to be a widget ends with `{"type":"widget_cancel",…}` and stays in the text.
///
/// Memory stays bounded whatever the input: output is streamed, `--mode links` writes at most
/// `cite-link-bytes` of links and `--json` holds at most `cite-runs` citation runs for its final
/// map (see `--limit`); past either, the output stops and the command fails naming the input byte.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The sources snapshot: {"sources":[{"index":1,"url":"…","title":"…"}]}.
    #[arg(long, value_name = "SOURCES.json")]
    sources: PathBuf,
    /// How citation runs are written.
    #[arg(long, value_enum, default_value_t = Mode::Placeholders)]
    mode: Mode,
    /// Write JSON lines (text pieces, widget events, then the citation map) instead of plain text.
    #[arg(long)]
    json: bool,
    /// Widget tags to parse out of the text (comma-separated names, e.g. chart,map or
    /// widget:weather-forecast,widget:map): a complete <name attr="…"/> or <name …></name> is
    /// removed, and reported with --json, after a start line while it streams.
    #[arg(long, value_name = "NAME,…", value_delimiter = ',')]
    widgets: Vec<String>,
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
    let request = CiteRequest {
        sources,
        mode: match args.mode {
            Mode::Placeholders => CiteMode::Placeholders,
            Mode::Links => CiteMode::Links,
        },
        widgets: args.widgets,
        // The runs are taken after every chunk unless `--json` prints the map at the end.
        map: args.json,
    };
    let mut processor =
        command::cite(&request, crate::input::limits()).map_err(|error| match error {
            command::Error::Widgets(e) => bad_input(anyhow::anyhow!("invalid --widgets: {e}")),
            other => anyhow::Error::new(other),
        })?;
    match stream(&mut processor, args.json) {
        Err(e) if is_broken_pipe(&e) => Ok(ExitCode::SUCCESS),
        result => result.map(|()| ExitCode::SUCCESS),
    }
}

fn stream(processor: &mut Processor, json: bool) -> anyhow::Result<()> {
    let mut stdin = io::stdin().lock();
    let mut stdout = BufWriter::new(io::stdout().lock());
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
        let events = processor.take_widget_events();
        if json && !events.is_empty() {
            for event in events {
                // An event serialises as its own line: `widget_start`, `widget`, `widget_cancel`.
                serde_json::to_writer(&mut stdout, &event)
                    .map_err(io::Error::from)
                    .context("cannot write to stdout")?;
                writeln!(stdout).context("cannot write to stdout")?;
            }
            // A start is news while its tag streams: it goes out now, not with the next text.
            stdout.flush().context("cannot write to stdout")?;
        }
        if let Some(overflow) = processor.overflow() {
            return Err(overflow_error(overflow));
        }
        if !json {
            // Only `--json` prints the map; without it the runs need not be kept.
            processor.take_citations();
        }
        if n == 0 {
            break;
        }
    }
    if json {
        let map = Line::Map {
            citations: Runs(processor.citations()),
            score: processor.score(),
        };
        serde_json::to_writer(&mut stdout, &map)
            .map_err(io::Error::from)
            .context("cannot write to stdout")?;
        writeln!(stdout).context("cannot write to stdout")?;
    }
    stdout.flush().context("cannot write to stdout")
}

/// The error for a bound the output reached: which limit, where, and how to raise it.
fn overflow_error(overflow: Overflow) -> anyhow::Error {
    let (limit, what, unit) = match overflow.kind {
        OverflowKind::LinkBytes => (Limit::CiteLinkBytes, "the Markdown links would pass", ""),
        _ => (Limit::CiteRuns, "the citation map would pass", " runs"),
    };
    bad_input(anyhow::anyhow!(
        "stdin at byte {}: {what} {}{unit} (the `{limit}` limit); output stopped before that \
         citation; raise it with --limit {limit}=VALUE",
        overflow.at,
        limit.format_value(overflow.limit),
    ))
}

/// The citation runs of the final map, serialised as a list straight from the processor.
struct Runs<'a>(&'a CitationMap);

impl serde::Serialize for Runs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
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
    Map { citations: C, score: S },
}
