//! Agent-family features through the binary: the context-file chain read with `--cwd`, the token
//! gate of `lint` without a send.

use crate::support::{promptstack, root, succeeded};
use insta_cmd::assert_cmd_snapshot;

const WORKSPACE: &str = "crates/promptstack-cli/tests/data/workspace";

#[test]
fn cwd_reads_the_context_chain_from_disk() {
    let output = succeeded(&[
        "render",
        "examples/coding-agent/agent.toml",
        "--send",
        "examples/coding-agent/sends/no-recursion.json",
        "--target",
        "system",
        "--cwd",
        &format!("{WORKSPACE}/repo/pkg"),
        "--agent-dir",
        &format!("{WORKSPACE}/agent"),
    ]);
    let text = String::from_utf8(output.stdout).unwrap();
    let absolute = root().join(WORKSPACE).display().to_string();
    let text = text.replace(&absolute, "[WORKSPACE]");
    // The agent directory first, then root → cwd; AGENTS.md wins over CLAUDE.md in one directory.
    let agent = text.find("Global rule from the agent directory.").unwrap();
    let repo = text.find("Repository rule: run make check.").unwrap();
    let package = text
        .find("Package rule &lt;pkg&gt; &amp; &quot;quotes&quot;.")
        .unwrap();
    assert!(agent < repo && repo < package, "{text}");
    assert!(!text.contains("Ignored: AGENTS.md"), "{text}");
    assert!(
        text.contains("<context_file path=\"../../agent/AGENTS.md\">"),
        "{text}"
    );
    assert!(
        text.contains("<context_file path=\"../AGENTS.md\">"),
        "{text}"
    );
    assert!(text.contains("<context_file path=\"CLAUDE.md\">"), "{text}");
    assert!(
        text.contains("- Working directory: [WORKSPACE]/repo/pkg\n"),
        "{text}"
    );
}

#[test]
fn cwd_that_does_not_exist_is_bad_input() {
    let output = promptstack()
        .args([
            "render",
            "examples/coding-agent/agent.toml",
            "--send",
            "examples/coding-agent/sends/no-recursion.json",
            "--cwd",
            "no/such/dir",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the working directory no/such/dir cannot be used"),
        "{stderr}"
    );
}

#[test]
fn lint_holds_literal_text_to_its_token_limit_without_a_send() {
    assert_cmd_snapshot!(promptstack().args([
        "lint",
        "crates/promptstack-cli/tests/data/lint/over-limit.toml"
    ]));
}

#[test]
fn lint_reports_a_malformed_site_pattern_in_a_send() {
    assert_cmd_snapshot!(promptstack().args([
        "lint",
        "examples/browser-agent/agent.toml",
        "--send",
        "crates/promptstack-cli/tests/data/lint/bad-site-pattern.json"
    ]));
}
