//! `docs/limits.md` kept in step with the code: its tables are generated from [`Limit`] and the
//! engine's constants, and this test fails when the document says anything else
//! (`UPDATE_LIMITS_DOC=1` rewrites them). It names MCP and tenant limits, so it needs both
//! features.

use std::path::Path;
use std::time::Duration;

use promptstack::limits::{
    BENCH_ITERATIONS_MAX, Limit, MCP_TIMEOUT_DEFAULT, MCP_TIMEOUT_MAX_SECONDS, SIM_GAP_MAX_SECONDS,
};

/// One row of a generated table.
fn row(cells: &[String]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

/// The limits an application changes, from [`Limit`].
fn changeable() -> String {
    let mut out = row(&[
        "name".into(),
        "bounds".into(),
        "default".into(),
        "at most".into(),
        "when it is hit".into(),
    ]);
    out.push_str("|---|---|---|---|---|\n");
    for limit in Limit::ALL {
        out.push_str(&row(&[
            format!("`{}`", limit.name()),
            limit.describe().to_owned(),
            limit.format_value(limit.default_value()),
            limit.format_value(limit.ceiling()),
            limit.on_hit().to_owned(),
        ]));
    }
    out
}

/// The limits fixed in the code, each from the constant that enforces it.
fn fixed() -> String {
    use promptstack::layers::files::Caps;
    let caps = Caps::default();
    let kib = |n: usize| format!("{} KiB", n / 1024);
    let rows: Vec<[String; 4]> = vec![
        [
            "nesting of arrays and tables in a spec or send context".into(),
            promptstack::spec::MAX_NESTING.to_string(),
            "fixed".into(),
            "refused (`too-deep`), located at the first bracket too deep, before any parser recurses".into(),
        ],
        [
            "operators in one template tag or gate expression".into(),
            promptstack::spec::MAX_EXPRESSION_OPERATORS.to_string(),
            "fixed".into(),
            "refused (`expression-too-long`, exit 2) before the template is compiled, located at the first operator past it; `lint` too".into(),
        ],
        [
            "nesting of containers a template makes (a list of a list of …)".into(),
            promptstack::spec::MAX_TEMPLATE_NESTING.to_string(),
            "fixed".into(),
            "the render fails (exit 1) where the value is made, naming the block".into(),
        ],
        [
            // The fuel cap is private to the engine's template module.
            "template fuel per render (an instruction costs 1, 64 bytes of data cost 1)".into(),
            format!(
                "{}, at most 5000000",
                promptstack::Agent::DEFAULT_TEMPLATE_MEMORY / 128
            ),
            "`template-memory` / 128".into(),
            "the render fails with an out-of-fuel error (exit 1), before allocating what it cannot pay for; a runaway loop ends instead of hanging".into(),
        ],
        [
            "errors reported for one spec or send context".into(),
            promptstack::spec::MAX_REPORTED_ERRORS.to_string(),
            "fixed".into(),
            "the first ones in source order are shown and the summary says more were found; no more are collected".into(),
        ],
        [
            "one context file shown in the prompt".into(),
            kib(caps.max_file_bytes),
            "`context_files(max_file_bytes=…)` in a template".into(),
            "the file is cut with a visible note".into(),
        ],
        [
            "all context files shown in the prompt".into(),
            kib(caps.max_total_bytes),
            "`context_files(max_total_bytes=…)` in a template".into(),
            "later files are cut or left out with a visible note".into(),
        ],
        [
            "citation labels in one conversation".into(),
            promptstack::turn::DEFAULT_SOURCE_CAP.to_string(),
            "`[turn] source_cap` in the spec".into(),
            "no label is issued past the cap".into(),
        ],
        [
            "tool name length".into(),
            promptstack::tools::naming::MAX_TOOL_NAME_LEN.to_string(),
            "fixed (the providers' limit)".into(),
            "MCP names are shortened with a hash suffix; a longer spec tool name is refused".into(),
        ],
        [
            "stream processor lookahead".into(),
            format!("{} bytes", promptstack::stream::MAX_LOOKAHEAD),
            "fixed".into(),
            "an undecided run longer than this is released as plain text".into(),
        ],
        [
            "one widget tag in model output (`cite --widgets`)".into(),
            format!("{} bytes", promptstack::stream::WIDGET_MAX),
            "fixed".into(),
            "the tag is passed through as text (after a `widget_start`, a `widget_cancel` says so)"
                .into(),
        ],
        [
            "one MCP message (a stdio line or an HTTP event)".into(),
            format!(
                "{} MiB",
                rmcp_line_limit() / (1024 * 1024)
            ),
            "fixed (the MCP client's transport)".into(),
            "the message is dropped; the request then fails or times out and the server is skipped".into(),
        ],
        [
            "MCP start + handshake, and again the listing".into(),
            format!("{} s", MCP_TIMEOUT_DEFAULT.as_secs()),
            format!("`tools --mcp-timeout SECONDS` (more than 0, at most {MCP_TIMEOUT_MAX_SECONDS})"),
            "the server is skipped for this send (`connect` or `list` timed out) and retried in the background".into(),
        ],
        [
            "tenant instructions: reuse, failure memory, read time".into(),
            tenant_times(),
            "`tenant::CacheConfig` in Rust".into(),
            "a slow or failed read yields no instructions for the send (fail open), with the reason".into(),
        ],
        [
            "gap between simulated turns".into(),
            format!("{SIM_GAP_MAX_SECONDS} s"),
            "`cache-sim --gap-seconds` (default 60)".into(),
            "refused (exit 2); so is a simulation ending after the year 9999".into(),
        ],
        [
            "timed iterations of `bench`".into(),
            BENCH_ITERATIONS_MAX.to_string(),
            "`bench --iterations` (default 2000)".into(),
            "refused (exit 2)".into(),
        ],
        [
            "input quoted in one message".into(),
            format!(
                "{} characters",
                promptstack::diagnostic::QUOTE_MAX_CHARS
            ),
            "fixed".into(),
            "the rest is shown as `…`; control characters are always escaped".into(),
        ],
    ];
    let mut out = row(&[
        "limit".into(),
        "value".into(),
        "how to change it".into(),
        "when it is hit".into(),
    ]);
    out.push_str("|---|---|---|---|\n");
    for cells in rows {
        out.push_str(&row(&cells));
    }
    out
}

fn rmcp_line_limit() -> usize {
    rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH
}

fn tenant_times() -> String {
    let config = promptstack::tenant::CacheConfig::default();
    let s = |d: Duration| format!("{} s", d.as_secs());
    format!(
        "{}, {}, {}",
        s(config.ttl),
        s(config.error_ttl),
        s(config.timeout)
    )
}

/// Replaces the text between `<!-- begin NAME -->` and `<!-- end NAME -->`.
fn splice(doc: &str, name: &str, table: &str) -> String {
    let begin = format!("<!-- begin {name} -->\n");
    let end = format!("<!-- end {name} -->");
    let from = doc.find(&begin).expect("begin marker") + begin.len();
    let to = doc.find(&end).expect("end marker");
    format!("{}{table}{}", &doc[..from], &doc[to..])
}

#[test]
fn the_limits_document_matches_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/limits.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let expected = splice(
        &splice(&doc, "changeable limits", &changeable()),
        "fixed limits",
        &fixed(),
    );
    if std::env::var_os("UPDATE_LIMITS_DOC").is_some() {
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    assert!(
        doc == expected,
        "docs/limits.md disagrees with the code; rerun with UPDATE_LIMITS_DOC=1 and review the \
         diff. Expected tables:\n\n{}\n{}",
        changeable(),
        fixed()
    );
}
