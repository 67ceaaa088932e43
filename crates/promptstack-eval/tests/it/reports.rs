//! Every report format: snapshots of the fixture, the JSON document read back, and hostile
//! strings that must not break the markup or reach the terminal.

use promptstack_eval::ErrorKind;
use promptstack_eval::report::{FORMAT_VERSION, Report, TerminalConfig};
use promptstack_eval::row::{AssertionResult, ResultRow, Run, ToolCallRecord, Transcript, Verdict};
use promptstack_eval::stats::StatsConfig;
use unicode_width::UnicodeWidthStr;

use crate::{fixture, key};

fn config() -> StatsConfig {
    StatsConfig::default().with_resamples(2000).with_seed(7)
}

fn report() -> Report {
    Report::new(fixture(), &config()).expect("the fixture has statistics")
}

/// The document with every non-integer number rounded to 9 decimals: the last bits of a
/// binomial tail or a normal quantile come from the platform's `ln` and `exp`, which the
/// snapshot should not pin. Numbers stand alone on their line in the pretty-printed document
/// (`"key": 0.25,` or `0.25,`), so only such values are touched, never text inside a string.
fn rounded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let (head, value) = match line.rfind(": ") {
            Some(at) if line.trim_start().starts_with('"') => line.split_at(at + 2),
            _ => line.split_at(line.len() - line.trim_start().len()),
        };
        let (number, comma) = value
            .strip_suffix(',')
            .map_or((value, ""), |number| (number, ","));
        match number.parse::<f64>() {
            Ok(x) if number.contains('.') => {
                out.push_str(&format!("{head}{:?}{comma}", (x * 1e9).round() / 1e9));
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[test]
fn json_snapshot() {
    insta::assert_snapshot!("report.json", rounded(&report().to_json().unwrap()));
}

#[test]
fn junit_snapshot() {
    insta::assert_snapshot!("report.junit.xml", report().to_junit_xml());
}

#[test]
fn html_snapshot() {
    insta::assert_snapshot!("report.html", report().to_html());
}

#[test]
fn terminal_snapshots() {
    let report = report();
    insta::assert_snapshot!(
        "report.terminal.100",
        report.to_terminal(&TerminalConfig::new(100))
    );
    insta::assert_snapshot!(
        "report.terminal.60",
        report.to_terminal(&TerminalConfig::new(60))
    );
}

#[test]
fn reports_do_not_depend_on_row_order() {
    let mut shuffled = fixture();
    shuffled.rows.reverse();
    shuffled.rows.rotate_left(17);
    let shuffled = Report::new(shuffled, &config()).unwrap();
    let report = report();
    assert_eq!(report.to_json().unwrap(), shuffled.to_json().unwrap());
    assert_eq!(report.to_html(), shuffled.to_html());
    assert_eq!(report.to_junit_xml(), shuffled.to_junit_xml());
}

#[test]
fn json_document_reads_back() {
    let report = report();
    let text = report.to_json().unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["format"], "promptstack-eval-report");
    assert_eq!(value["version"], FORMAT_VERSION);
    assert_eq!(value["run"]["suite"], "browser-agent");
    assert_eq!(value["rows"].as_array().unwrap().len(), 56);
    assert_eq!(value["statistics"]["config"]["seed"], 7);
    let back = Report::from_json(&text).unwrap();
    assert_eq!(back.run(), report.run());
    assert_eq!(back.statistics().config, report.statistics().config);
    assert_eq!(
        back.statistics().cells.len(),
        report.statistics().cells.len()
    );
}

#[test]
fn json_of_another_version_or_kind_is_refused() {
    let text = report().to_json().unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["version"] = serde_json::json!(FORMAT_VERSION + 1);
    let error = Report::from_json(&value.to_string()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Report);
    assert!(error.message().contains("cannot be read"), "{error}");
    value["version"] = serde_json::json!(FORMAT_VERSION);
    value["format"] = serde_json::json!("junit");
    assert!(Report::from_json(&value.to_string()).is_err());
    assert!(Report::from_json("{").is_err());
    assert!(Report::from_json("[]").is_err());
}

const HOSTILE: &[&str] = &[
    "</testcase><script>alert(1)</script>",
    "\"><img src=x onerror=alert(1)>",
    "]]><!-- -->&amp;&#0;&lt;",
    "'single' \"double\" <tag attr='x'>",
    "ctl\u{0}\u{1}\u{7}\u{8}\u{b}\u{c}\u{1b}[31mred\u{7f}\u{85}\u{9b}",
    "bidi\u{202e}txt.exe\u{2066}",
    "line\r\nbreak\ttab",
    "not\u{fffe}a\u{ffff}char",
    "宽字符的场景名称很长很长很长很长很长很长很长很长",
];

/// What a strict reader gives back for a hostile string: the characters XML cannot hold
/// become U+FFFD.
fn as_read(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if c < ' ' || ('\u{7f}'..='\u{9f}').contains(&c) => '\u{fffd}',
            '\u{fffe}' | '\u{ffff}' => '\u{fffd}',
            c => c,
        })
        .collect()
}

fn hostile_report() -> Report {
    let mut rows = Vec::new();
    for (index, text) in HOSTILE.iter().enumerate() {
        for (version, passed) in [
            (format!("v-{text}"), index % 2 == 0),
            ("plain".to_owned(), true),
        ] {
            let mut key = key(&version, text, text, 0);
            key.agent = text.to_string();
            key.tier = text.to_string();
            key.fingerprint = text.to_string();
            let mut row = ResultRow::new(key, passed)
                .with_assertion(AssertionResult::new(
                    *text,
                    *text,
                    if passed { Verdict::Pass } else { Verdict::Fail },
                    *text,
                ))
                .with_transcript(
                    Transcript::new(*text, *text).with_tool_call(ToolCallRecord::new(*text, *text)),
                );
            if index == 3 {
                row = row.with_error(*text);
            }
            rows.push(row);
        }
    }
    Report::new(
        Run::new(HOSTILE.concat(), rows).with_started_at(HOSTILE[1]),
        &config(),
    )
    .unwrap()
}

fn parse(text: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(text, options).expect("well-formed XML")
}

#[test]
fn junit_survives_hostile_strings() {
    let xml = hostile_report().to_junit_xml();
    let document = parse(&xml);
    let allowed = [
        "testsuites",
        "testsuite",
        "properties",
        "property",
        "testcase",
        "failure",
        "error",
        "system-out",
    ];
    for node in document.descendants().filter(|n| n.is_element()) {
        assert!(
            allowed.contains(&node.tag_name().name()),
            "{:?}",
            node.tag_name()
        );
    }
    let root = document.root_element();
    assert_eq!(
        root.attribute("name"),
        Some(as_read(&HOSTILE.concat()).as_str())
    );
    let names: Vec<&str> = document
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert_eq!(names.len(), 2 * HOSTILE.len());
    let outputs: Vec<String> = document
        .descendants()
        .filter(|n| n.has_tag_name("system-out"))
        .map(|n| n.text().unwrap_or_default().to_owned())
        .collect();
    for text in HOSTILE {
        let read = as_read(text);
        assert!(
            names.contains(&format!("{read} #0").as_str()),
            "{read:?} not among {names:?}"
        );
        assert!(outputs.contains(&read), "{read:?} not among the outputs");
    }
}

#[test]
fn html_survives_hostile_strings() {
    let html = hostile_report().to_html();
    let document = parse(&html);
    let allowed = [
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "span",
        "strong", "table", "thead", "tbody", "tr", "th", "td", "a", "br", "svg", "rect", "line",
        "circle", "text", "section", "details", "summary", "code", "pre", "ol", "li",
    ];
    let mut texts = String::new();
    for node in document.descendants() {
        if node.is_text() {
            texts.push_str(node.text().unwrap_or_default());
            texts.push('\u{0}');
        }
        if !node.is_element() {
            continue;
        }
        let name = node.tag_name().name();
        assert!(allowed.contains(&name), "element {name}");
        for attribute in node.attributes() {
            assert!(
                !attribute.name().starts_with("on"),
                "{name} has {}",
                attribute.name()
            );
            if attribute.name() == "href" {
                assert!(
                    attribute.value().starts_with("#scenario-"),
                    "{}",
                    attribute.value()
                );
            }
            assert!(
                !["src", "srcdoc", "action", "formaction", "style"].contains(&attribute.name())
            );
        }
    }
    for text in HOSTILE {
        assert!(
            texts.contains(&as_read(text)),
            "{text:?} is not shown as text"
        );
    }
    assert!(!html.to_lowercase().contains("<script"));
}

#[test]
fn html_policy_allows_only_its_own_stylesheet() {
    use sha2::Digest as _;
    let html = report().to_html();
    let document = parse(&html);
    let policy = document
        .descendants()
        .find(|n| n.attribute("http-equiv") == Some("Content-Security-Policy"))
        .and_then(|n| n.attribute("content"))
        .expect("a Content-Security-Policy meta element")
        .to_owned();
    assert!(policy.starts_with("default-src 'none';"), "{policy}");
    let styles: Vec<_> = document
        .descendants()
        .filter(|n| n.has_tag_name("style"))
        .collect();
    assert_eq!(styles.len(), 1);
    let style = styles[0].text().unwrap();
    let digest = sha2::Sha256::digest(style.as_bytes());
    let expected = format!("style-src 'sha256-{}'", base64(&digest));
    assert!(policy.contains(&expected), "{policy} lacks {expected}");
    // Nothing is loaded from elsewhere.
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("//cdn"));
}

/// Base64 written independently of the crate's (bit by bit) to check the policy's hash.
fn base64(bytes: &[u8]) -> String {
    let alphabet: Vec<char> = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        .chars()
        .collect();
    let bits: Vec<u8> = bytes
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1))
        .collect();
    let mut out: String = bits
        .chunks(6)
        .map(|chunk| {
            let value = (0..6).fold(0usize, |v, i| {
                (v << 1) | usize::from(*chunk.get(i).unwrap_or(&0))
            });
            alphabet[value]
        })
        .collect();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    out
}

#[test]
fn terminal_strips_control_characters_and_fits_its_width() {
    let report = hostile_report();
    for width in [40, 60, 100, 160] {
        let text = report.to_terminal(&TerminalConfig::new(width));
        for c in text.chars() {
            assert!(
                c == '\n'
                    || !(c.is_control()
                        || ('\u{202a}'..='\u{202e}').contains(&c)
                        || ('\u{2066}'..='\u{2069}').contains(&c)),
                "{c:?} reached the terminal"
            );
        }
        for line in text.lines() {
            assert!(
                line.width() <= width,
                "{width}: {line:?} is {} wide",
                line.width()
            );
        }
    }
    insta::assert_snapshot!(
        "hostile.terminal.100",
        report.to_terminal(&TerminalConfig::new(100))
    );
}

#[test]
fn a_sparse_matrix_too_large_to_draw_is_left_to_the_json() {
    // 141 versions × 150 scenarios on one model, each scenario run by one version.
    let rows: Vec<ResultRow> = (0..150)
        .map(|s| {
            ResultRow::new(
                key(&format!("v{:03}", s % 141), "m", &format!("s{s:03}"), 0),
                true,
            )
        })
        .collect();
    let report = Report::new(Run::new("wide", rows), &config()).unwrap();
    let html = report.to_html();
    assert!(
        html.contains("141 versions × 150 scenarios is too large a table to draw here"),
        "the matrix was drawn"
    );
    parse(&html);
    assert_eq!(report.statistics().cells.len(), 150);
}
