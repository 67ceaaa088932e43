//! `promptstack cite` end to end: streaming, both modes, JSON lines, bad input.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use insta_cmd::{assert_cmd_snapshot, get_cargo_bin};

const ANSWER: &str = include_str!("../data/cite/answer.md");

/// The binary, run from the crate directory so that paths in snapshots are relative.
fn cite() -> Command {
    let mut command = Command::new(get_cargo_bin("promptstack"));
    command.current_dir(env!("CARGO_MANIFEST_DIR")).arg("cite");
    command
}

#[test]
fn help() {
    assert_cmd_snapshot!(cite().arg("--help"));
}

#[test]
fn placeholders() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", "tests/data/cite/sources.json"])
            .pass_stdin(ANSWER)
    );
}

#[test]
fn placeholders_json() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", "tests/data/cite/sources.json", "--json"])
            .pass_stdin(ANSWER)
    );
}

#[test]
fn links() {
    assert_cmd_snapshot!(
        cite()
            .args([
                "--sources",
                "tests/data/cite/sources.json",
                "--mode",
                "links"
            ])
            .pass_stdin(ANSWER)
    );
}

#[test]
fn invalid_utf8_is_replaced() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", "tests/data/cite/sources.json"])
            .pass_stdin(b"ok [1] \xFF\xFE end\n".to_vec())
    );
}

#[test]
fn missing_sources_file() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", "tests/data/cite/absent.json"])
            .stdin(Stdio::null())
    );
}

#[test]
fn invalid_sources_file() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", "tests/data/cite/answer.md"])
            .stdin(Stdio::null())
    );
}

#[test]
fn sources_with_unknown_fields() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", "tests/data/cite/unknown-field.json"])
            .stdin(Stdio::null())
    );
}

#[test]
fn missing_sources_flag() {
    assert_cmd_snapshot!(cite().stdin(Stdio::null()));
}

#[test]
fn bad_mode() {
    assert_cmd_snapshot!(
        cite()
            .args([
                "--sources",
                "tests/data/cite/sources.json",
                "--mode",
                "html"
            ])
            .stdin(Stdio::null())
    );
}

/// Output for a decided prefix arrives while stdin is still open: the command streams.
#[test]
fn streams_before_input_ends() {
    let mut child = cite()
        .args(["--sources", "tests/data/cite/sources.json", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // The generous bound only keeps a broken build from hanging the suite.
    let wait = Duration::from_secs(60);
    stdin.write_all("Cited [1] and【".as_bytes()).unwrap();
    stdin.flush().unwrap();
    assert_eq!(
        received.recv_timeout(wait).unwrap(),
        r#"{"type":"text","text":"Cited {{cite:1}} and"}"#
    );
    stdin.write_all("2†Wikipedia】 done.\n".as_bytes()).unwrap();
    stdin.flush().unwrap();
    assert_eq!(
        received.recv_timeout(wait).unwrap(),
        r#"{"type":"text","text":"{{cite:2}} done.\n"}"#
    );
    drop(stdin);
    let last = received.recv_timeout(wait).unwrap();
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
            .args([
                "--sources",
                "tests/data/cite/sources.json",
                "--json",
                "--widgets",
                "chart,map"
            ])
            .pass_stdin(
                "Sales grew [1]. <chart kind=\"bar\" data='q3'/>\n\
                 `<map/>` is code; <div/> is text. <map region=\"eu\"></map>\n"
            )
    );
}

#[test]
fn invalid_widget_name() {
    assert_cmd_snapshot!(
        cite()
            .args([
                "--sources",
                "tests/data/cite/sources.json",
                "--widgets",
                "chart,<x>"
            ])
            .stdin(Stdio::null())
    );
}

#[test]
fn currency_and_display_math() {
    assert_cmd_snapshot!(
        cite()
            .args(["--sources", "tests/data/cite/sources.json"])
            .pass_stdin("It costs $5 and $10 total [1], while $2^n$ grows.\n$$x^2$$\n")
    );
}

/// Links past `cite-link-bytes` stop the output before the run that would pass it, with the
/// input byte named (exit 2).
#[test]
fn links_past_their_limit_stop_with_a_location() {
    assert_cmd_snapshot!(
        Command::new(get_cargo_bin("promptstack"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "--limit",
                "cite-link-bytes=200",
                "cite",
                "--sources",
                "tests/data/cite/sources.json",
                "--mode",
                "links"
            ])
            .pass_stdin("One [1]. Two [2]. Three [1]. Four [2]. Five [1].\n")
    );
}

/// `--json` holds at most `cite-runs` runs for its final map.
#[test]
fn citation_runs_past_their_limit_stop_with_a_location() {
    assert_cmd_snapshot!(
        Command::new(get_cargo_bin("promptstack"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args([
                "--limit",
                "cite-runs=2",
                "cite",
                "--sources",
                "tests/data/cite/sources.json",
                "--json"
            ])
            .pass_stdin("a [1]\nb [2]\nc [1]\nd [2]\n")
    );
}

/// Without `--json` the runs are not kept, so `cite-runs` never binds.
#[test]
fn citation_runs_are_not_kept_without_json() {
    let output = Command::new(get_cargo_bin("promptstack"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "--limit",
            "cite-runs=2",
            "cite",
            "--sources",
            "tests/data/cite/sources.json",
        ])
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
