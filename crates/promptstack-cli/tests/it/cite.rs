//! `promptstack cite` end to end: streaming, both modes, JSON lines, bad input.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

const ANSWER: &str = include_str!("../data/cite/answer.md");

/// The sources of the bundled answer, relative to the crate directory.
const SOURCES: &str = "tests/data/cite/sources.json";

/// The binary, run from the crate directory so that paths in snapshots are relative.
fn cite() -> Command {
    let mut command = Command::new(get_cargo_bin("promptstack"));
    command.current_dir(env!("CARGO_MANIFEST_DIR")).arg("cite");
    command
}

/// `promptstack --limit LIMIT cite --sources SOURCES`.
fn cite_within(limit: &str) -> Command {
    let mut command = Command::new(get_cargo_bin("promptstack"));
    command.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "--limit",
        limit,
        "cite",
        "--sources",
        SOURCES,
    ]);
    command
}

/// `promptstack cite --sources FILE` with nothing on its input.
fn cite_sources(file: &str) -> Command {
    let mut command = cite();
    command.args(["--sources", file]).stdin(Stdio::null());
    command
}

#[test]
fn help() {
    assert_cmd_snapshot!(cite().arg("--help"));
}

#[test]
fn placeholders() {
    assert_cmd_snapshot!(cite().args(["--sources", SOURCES]).pass_stdin(ANSWER));
}

#[test]
fn placeholders_json() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", SOURCES, "--json"])
            .pass_stdin(ANSWER)
    );
}

#[test]
fn links() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", SOURCES, "--mode", "links"])
            .pass_stdin(ANSWER)
    );
}

#[test]
fn invalid_utf8_is_replaced() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", SOURCES])
            .pass_stdin(b"ok [1] \xFF\xFE end\n".to_vec())
    );
}

#[test]
fn missing_sources_file() {
    assert_cmd_snapshot!(cite_sources("tests/data/cite/absent.json"));
}

#[test]
fn invalid_sources_file() {
    assert_cmd_snapshot!(cite_sources("tests/data/cite/answer.md"));
}

#[test]
fn sources_with_unknown_fields() {
    assert_cmd_snapshot!(cite_sources("tests/data/cite/unknown-field.json"));
}

#[test]
fn missing_sources_flag() {
    assert_cmd_snapshot!(cite().stdin(Stdio::null()));
}

#[test]
fn bad_mode() {
    assert_cmd_snapshot!(cite_sources(SOURCES).args(["--mode", "html"]));
}

/// Output for a decided prefix arrives while stdin is still open: the command streams.
#[test]
fn streams_before_input_ends() {
    let (mut stdin, received, mut child) = spawn_json(&[]);
    stdin.write_all("Cited [1] and【".as_bytes()).unwrap();
    stdin.flush().unwrap();
    assert_eq!(
        received.recv_timeout(WAIT).unwrap(),
        r#"{"type":"text","text":"Cited {{cite:1}} and"}"#
    );
    stdin.write_all("2†Wikipedia】 done.\n".as_bytes()).unwrap();
    stdin.flush().unwrap();
    assert_eq!(
        received.recv_timeout(WAIT).unwrap(),
        r#"{"type":"text","text":"{{cite:2}} done.\n"}"#
    );
    drop(stdin);
    let last = received.recv_timeout(WAIT).unwrap();
    assert!(
        last.starts_with(r#"{"type":"map","citations":[{"key":1,"#),
        "{last}"
    );
    assert!(child.wait().unwrap().success());
}

/// The chat-assistant example's answer to its research send, through both modes.
#[test]
fn example_answer() {
    let answer = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/chat-assistant/answers/research.md"
    ))
    .unwrap();
    let sources = "../../examples/chat-assistant/answers/research.sources.json";
    assert_cmd_snapshot!(
        "example_answer_json",
        cite()
            .args(["--sources", sources, "--json"])
            .pass_stdin(answer.clone())
    );
    assert_cmd_snapshot!(
        "example_answer_links",
        cite()
            .args(["--sources", sources, "--mode", "links"])
            .pass_stdin(answer)
    );
}

#[test]
fn widgets_json() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", SOURCES, "--json", "--widgets", "chart,map"])
            .pass_stdin(
                "Sales grew [1]. <chart kind=\"bar\" data='q3'/>\n\
                 `<map/>` is code; <div/> is text. <map region=\"eu\"></map>\n"
            )
    );
}

/// The chat assistant's widget contract: namespaced names, reported as declared, a start line
/// before each widget, a cancel for a tag that turns out not to be one.
#[test]
fn chat_assistant_widgets_json() {
    assert_cmd_snapshot!(chat_assistant_widgets());
}

fn chat_assistant_widgets() -> Command {
    let mut command = cite();
    command
        .args([
            "--sources",
            "../../examples/chat-assistant/answers/weather.sources.json",
            "--widgets",
            "widget:weather-forecast,widget:map",
            "--json",
        ])
        .stdin(
            std::fs::File::open(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../examples/chat-assistant/answers/weather.md"
            ))
            .unwrap(),
        );
    command
}

/// docs/stream.md shows the command above and its output as the binary prints it.
#[test]
fn the_stream_doc_shows_the_real_widget_output() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/stream.md"))
        .unwrap();
    let output = chat_assistant_widgets().output().unwrap();
    assert!(output.status.success());
    let printed = String::from_utf8(output.stdout).unwrap();
    let command = "promptstack cite --sources examples/chat-assistant/answers/weather.sources.json \\\n    \
                   --widgets widget:weather-forecast,widget:map --json \\\n    \
                   < examples/chat-assistant/answers/weather.md\n";
    let shown = format!("```console\n$ {command}{printed}```\n");
    assert!(
        doc.contains(&shown),
        "docs/stream.md should show, verbatim:\n{shown}"
    );
}

/// The text so far while a stream is open: a half-written tag or a prefix of a declared name is
/// held back, a declared widget whose name is complete is announced at once, anything else is
/// text. Each case is written with stdin left open, then closed: a tag still open at the end is
/// cancelled and its text comes out.
#[test]
fn widgets_while_the_input_streams() {
    let cases: &[(&str, &[&str])] = &[
        (
            "Some text <widget:weath",
            &[r#"{"type":"text","text":"Some text"}"#],
        ),
        (
            "Some text <widget:weather-forecast location=\"Seattle",
            &[
                r#"{"type":"text","text":"Some text "}"#,
                r#"{"type":"widget_start","name":"widget:weather-forecast","offset":10}"#,
            ],
        ),
        (
            "Here you go! <widget:map data='{\"type\":\"FeatureColl",
            &[
                r#"{"type":"text","text":"Here you go! "}"#,
                r#"{"type":"widget_start","name":"widget:map","offset":13}"#,
            ],
        ),
        ("Some text <w", &[r#"{"type":"text","text":"Some text"}"#]),
        (
            "Some text <div",
            &[r#"{"type":"text","text":"Some text <div"}"#],
        ),
        ("5 < 10", &[r#"{"type":"text","text":"5 < 10"}"#]),
    ];
    for (so_far, expected) in cases {
        let (mut stdin, received, mut child) = spawn_widgets();
        stdin.write_all(so_far.as_bytes()).unwrap();
        stdin.flush().unwrap();
        for line in *expected {
            assert_eq!(&received.recv_timeout(WAIT).unwrap(), line, "{so_far:?}");
        }
        drop(stdin);
        let rest: Vec<String> = received.iter().collect();
        assert!(child.wait().unwrap().success());
        let mut lines: Vec<serde_json::Value> = expected
            .iter()
            .chain(rest.iter().map(String::as_str).collect::<Vec<_>>().iter())
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.pop().unwrap()["type"], "map", "{so_far:?}");
        let text: String = lines
            .iter()
            .filter(|line| line["type"] == "text")
            .map(|line| line["text"].as_str().unwrap())
            .collect();
        assert_eq!(&text, so_far, "at the end everything is text");
        let started = lines.iter().filter(|l| l["type"] == "widget_start").count();
        let cancelled = lines
            .iter()
            .filter(|l| l["type"] == "widget_cancel")
            .count();
        assert_eq!(started, cancelled, "{so_far:?}: {lines:?}");
    }
    // Nothing at all is released of a bare prefix: the first line comes once the name stops
    // matching, and holds the whole tag.
    let (mut stdin, received, mut child) = spawn_widgets();
    stdin.write_all(b"<widget:weath").unwrap();
    stdin.flush().unwrap();
    stdin.write_all(b"er-forecast location=\"Oslo\"/>").unwrap();
    stdin.flush().unwrap();
    assert_eq!(
        received.recv_timeout(WAIT).unwrap(),
        r#"{"type":"widget_start","name":"widget:weather-forecast","offset":0}"#
    );
    assert_eq!(
        received.recv_timeout(WAIT).unwrap(),
        r#"{"type":"widget","name":"widget:weather-forecast","attributes":{"location":"Oslo"},"offset":0}"#
    );
    drop(stdin);
    let last = received.recv_timeout(WAIT).unwrap();
    assert!(last.starts_with(r#"{"type":"map""#), "{last}");
    assert!(child.wait().unwrap().success());
}

/// The generous bound only keeps a broken build from hanging the suite.
const WAIT: Duration = Duration::from_secs(60);

/// `cite --json --sources SOURCES` with `args`, stdin open, stdout read line by line on a
/// thread.
fn spawn_json(
    args: &[&str],
) -> (
    std::process::ChildStdin,
    mpsc::Receiver<String>,
    std::process::Child,
) {
    let mut child = cite()
        .args(["--sources", SOURCES, "--json"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    (stdin, received, child)
}

/// [`spawn_json`] with the chat assistant's widgets declared.
fn spawn_widgets() -> (
    std::process::ChildStdin,
    mpsc::Receiver<String>,
    std::process::Child,
) {
    spawn_json(&["--widgets", "widget:weather-forecast,widget:map"])
}

#[test]
fn invalid_widget_name() {
    assert_cmd_snapshot!(cite_sources(SOURCES).args(["--widgets", "chart,<x>"]));
}

#[test]
fn currency_and_display_math() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", SOURCES])
            .pass_stdin("It costs $5 and $10 total [1], while $2^n$ grows.\n$$x^2$$\n")
    );
}

/// Links past `cite-link-bytes` stop the output before the run that would pass it, with the
/// input byte named (exit 2).
#[test]
fn links_past_their_limit_stop_with_a_location() {
    assert_cmd_snapshot!(
        cite_within("cite-link-bytes=200")
            .args(["--mode", "links"])
            .pass_stdin("One [1]. Two [2]. Three [1]. Four [2]. Five [1].\n")
    );
}

/// `--json` holds at most `cite-runs` runs for its final map.
#[test]
fn citation_runs_past_their_limit_stop_with_a_location() {
    assert_cmd_snapshot!(
        cite_within("cite-runs=2")
            .args(["--json"])
            .pass_stdin("a [1]\nb [2]\nc [1]\nd [2]\n")
    );
}

/// Without `--json` the runs are not kept, so `cite-runs` never binds.
#[test]
fn citation_runs_are_not_kept_without_json() {
    let output = cite_within("cite-runs=2")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(b"a [1]\nb [2]\nc [1]\nd [2]\n")?;
            child.wait_with_output()
        })
        .expect("run");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "a {{cite:1}}\nb {{cite:2}}\nc {{cite:3}}\nd {{cite:4}}\n"
    );
}
