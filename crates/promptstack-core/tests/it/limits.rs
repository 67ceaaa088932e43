//! The engine's own limits: expression size before compiling, template memory per assembly,
//! variable shapes, out-of-range numbers, the cap on reported spec errors, and the token limits
//! of rendered blocks.

use promptstack_core::spec::{MAX_EXPRESSION_OPERATORS, MAX_REPORTED_ERRORS};
use promptstack_core::{Agent, ErrorKind, SendContext, SpecFormat};

const SEND: &str = r#"{
  "now": "2026-11-30T09:15:00+01:00",
  "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"}
}"#;

fn send() -> SendContext {
    SendContext::from_json(SEND.as_bytes(), "send.json").unwrap()
}

/// A spec of stable author blocks with these templates, one block each.
fn spec(templates: &[&str]) -> String {
    let mut out = String::from(
        "spec_version = 1\nname = \"t\"\n\n[targets.system]\nsystem = [\"@stable\"]\n",
    );
    for (i, template) in templates.iter().enumerate() {
        out.push_str(&format!(
            "\n[[blocks]]\nid = \"b{i}\"\ntrust = \"author\"\nstability = \"stable\"\ntemplate = '''{template}'''\n"
        ));
    }
    out
}

fn compile(source: &str) -> Result<Agent, promptstack_core::SpecError> {
    Agent::from_source(source.as_bytes(), "agent.toml", SpecFormat::Toml)
}

#[test]
fn long_chains_are_refused_before_compiling_at_the_first_operator_past_the_limit() {
    let chain = |op: &str, n: usize| format!("{{{{ 1{} }}}}", op.repeat(n));
    for op in [" + 1", " ~ 1", "|upper", " and 1", ".x"] {
        let error = compile(&spec(&[&chain(op, 30_000)])).unwrap_err();
        let diagnostic = &error.diagnostics[0];
        assert_eq!(diagnostic.code, "expression-too-long", "{op}");
        let location = diagnostic.location.as_ref().unwrap();
        assert_eq!(location.line, 11, "{op}");
        // The operator past the limit, counted from the template's start (after `{{ 1`).
        let column = 1 + "template = '''{{ 1".len() + MAX_EXPRESSION_OPERATORS * op.len();
        assert!(
            location.column >= column - op.len() && location.column <= column + 1,
            "{op}: column {} not near {column}",
            location.column
        );
    }
    // Within the limit, the same chain compiles, in a template and in a gate.
    compile(&spec(&[&chain(" + 1", MAX_EXPRESSION_OPERATORS - 1)])).unwrap();
    let gate = format!(
        "{}\nwhen = 'true{}'\n",
        spec(&["x"]).trim_end(),
        " and true".repeat(30_000)
    );
    let error = compile(&gate).unwrap_err();
    assert_eq!(error.diagnostics[0].code, "expression-too-long");
}

#[test]
fn operators_in_strings_comments_and_raw_blocks_are_not_counted() {
    let many = "+".repeat(5 * MAX_EXPRESSION_OPERATORS);
    let templates = [
        format!("{{{{ '{many}' }}}}"),
        format!("{{# {many} #}}"),
        format!("{{% raw %}}{{{{ {} }}}}{{% endraw %}}", "1 +".repeat(2000)),
        format!("plain text {many}"),
    ];
    let refs: Vec<&str> = templates.iter().map(String::as_str).collect();
    compile(&spec(&refs)).unwrap();
}

#[test]
fn one_render_may_not_allocate_more_than_half_the_template_memory() {
    let agent = compile(&spec(&["{{ ('a' * 1000000)|length }}"]))
        .unwrap()
        .with_template_memory(1024 * 1024);
    let error = agent.assemble(&send()).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Render);
    assert!(error.to_string().contains("fuel"), "{error}");
    let roomy = compile(&spec(&["{{ ('a' * 1000000)|length }}"]))
        .unwrap()
        .with_template_memory(8 * 1024 * 1024);
    assert_eq!(roomy.assemble(&send()).unwrap().stable(), "1000000");
}

#[test]
fn allocating_filters_check_before_allocating() {
    for template in [
        "{{ (['a' * 100000] * 1000)|join }}",
        "{{ (['a' * 100000] * 1000)|join('-') }}",
        "{{ ['a' * 100000] * 100000000 }}",
        "{{ (['a' * 100000] * 100000000)|string|length }}",
        "{{ (['a' * 100000] * 100000000)|compact }}",
        "{{ ('<' * 300000)|escape_xml }}",
        "{{ ([('a' * 100000)] * 1000)|guidelines|length }}",
    ] {
        let agent = compile(&spec(&[template]))
            .unwrap()
            .with_template_memory(2 * 1024 * 1024);
        let error = agent.assemble(&send()).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("would not fit") || message.contains("fuel"),
            "{template}: {error}"
        );
    }
    // The overridden filters behave as minijinja's.
    let agent = compile(&spec(&[
        "{{ [1, 'a', none]|join(', ') }}|{{ [{'n': 'x'}, {'n': 'y'}]|join(attribute='n') }}|{{ [1, 2]|string }}",
    ]))
    .unwrap();
    assert_eq!(
        agent.assemble(&send()).unwrap().stable(),
        "1, a, None|xy|[1, 2]"
    );
}

#[test]
fn the_texts_of_one_assembly_share_half_the_template_memory() {
    // Each block renders 200 KB, within one render's share of 1 MiB; three of them are not.
    let block = "{{ 'a' * 200000 }}";
    let agent = compile(&spec(&[block; 4]))
        .unwrap()
        .with_template_memory(1024 * 1024);
    let error = agent.assemble(&send()).unwrap_err();
    assert!(error.to_string().contains("rendered more than"), "{error}");
    assert_eq!(error.block(), Some("b2"));
    let agent = compile(&spec(&[block; 1]))
        .unwrap()
        .with_template_memory(1024 * 1024);
    agent.assemble(&send()).unwrap();
}

#[test]
fn sends_are_checked_against_declared_shapes_where_the_value_is() {
    let source = r#"spec_version = 1
name = "t"

[variables.answers]
stability = "stable"
trust = "user"
shape = "list of object"
default = []

[targets.system]
system = ["@stable"]

[[blocks]]
id = "answers"
trust = "user"
stability = "stable"
template = "{% for a in variables.answers %}{{ a.q }}{% endfor %}"

[[blocks]]
id = "end"
trust = "author"
stability = "stable"
text = "end"
"#;
    let agent = compile(source).unwrap();
    let bytes = br#"{
  "now": "2026-11-30T09:15:00+01:00",
  "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"},
  "variables": {"answers": "not a list"}
}"#;
    let error = SendContext::from_json_for(bytes, "send.json", agent.spec()).unwrap_err();
    let diagnostic = &error.diagnostics[0];
    assert_eq!(diagnostic.code, "bad-shape");
    assert_eq!(diagnostic.path, "variables.answers");
    let location = diagnostic.location.as_ref().unwrap();
    assert_eq!((location.line, location.column), (4, 28));
    // Read without the spec, the same send fails at assembly with the variable named.
    let ctx = SendContext::from_json(bytes, "send.json").unwrap();
    let error = agent.assemble(&ctx).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Context);
    assert!(
        error
            .to_string()
            .contains("`variables.answers` is a string"),
        "{error}"
    );
}

#[test]
fn out_of_range_numbers_are_located_with_their_key_path() {
    for (line, expected_column) in [
        ("max_tokens = 1e30", 14),
        ("priority = 9223372036854775807", 12),
    ] {
        let source = format!("{}max_tokens_line_placeholder\n", spec(&["x"]))
            .replace("max_tokens_line_placeholder", line);
        let error = compile(&source).unwrap_err();
        let diagnostic = &error.diagnostics[0];
        assert_eq!(diagnostic.code, "out-of-range", "{line}");
        assert!(diagnostic.path.starts_with("blocks[0]."), "{line}");
        let location = diagnostic.location.as_ref().unwrap();
        assert_eq!(
            (location.line, location.column),
            (12, expected_column),
            "{line}"
        );
    }
}

#[test]
fn reported_spec_errors_are_capped() {
    let source = format!(
        "spec_version = 1\nname = \"t\"\n{}",
        "k = 1\n".repeat(10 * MAX_REPORTED_ERRORS)
    );
    let error = compile(&source).unwrap_err();
    assert_eq!(error.diagnostics.len(), MAX_REPORTED_ERRORS);
    assert!(error.truncated);
    assert!(
        error
            .to_string()
            .ends_with("more than 100 errors in spec; the first 100 are shown")
    );
}

#[test]
fn rendered_blocks_over_their_token_limit_are_reported_in_both_halves_with_the_model_s_counting() {
    let source = r#"spec_version = 1
name = "t"

[targets.system]
system = ["@stable", "@volatile"]

[[blocks]]
id = "rules"
trust = "author"
stability = "stable"
max_tokens = 2
template = "{{ 'one two three four five six seven' }}"

[[blocks]]
id = "brief"
trust = "author"
stability = "stable"
max_tokens = 50
template = "{{ 'short' }}"

[[blocks]]
id = "clock"
trust = "platform"
stability = "volatile"
max_tokens = 1
template = "Today is {{ now.date }}, a working day."
"#;
    let agent = compile(source).unwrap();
    for fresh in [false, true] {
        let assembly = if fresh {
            agent.assemble_fresh(&send()).unwrap()
        } else {
            agent.assemble(&send()).unwrap()
        };
        // gpt-4o has its own encoding bundled: the limits are checked with exact counts.
        let counting = assembly.counting();
        assert!(counting.exact);
        let over: Vec<(&str, String)> = assembly
            .diagnostics()
            .filter(|d| d.code == "over-token-limit")
            .map(|d| (d.subject.as_deref().unwrap_or(""), d.message.clone()))
            .collect();
        let ids: Vec<&str> = over.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, ["rules", "clock"], "{over:?}");
        for (id, message) in &over {
            let text = assembly.block(id).unwrap().text.clone();
            let tokens = agent.count_tokens(counting, &text).count;
            assert!(
                message.contains(&format!("is {tokens} tokens")),
                "{id}: {message}"
            );
        }
    }
}

/// The longest chains a tag may hold compile and render on a thread with the 2 MiB stack of a
/// test thread or a server's worker: each is walked recursively by the template compiler, with
/// a guard around every link that makes a value (see `docs/limits.md`, "Templates").
#[test]
fn the_longest_chains_compile_and_render_on_a_small_stack() {
    // The longest chain the operator count lets through, with the parentheses and `| length`.
    let n = MAX_EXPRESSION_OPERATORS - 4;
    let chains = [
        format!("{{{{ (v{}) | length }}}}", " + v".repeat(n)),
        format!("{{{{ (v{}) | length }}}}", " * 1".repeat(n)),
        format!("{{{{ v{} | length }}}}", "|list".repeat(n)),
        format!("{{{{ w{} }}}}", " ~ w".repeat(n)),
        format!("{{{{ 'a' in w{} }}}}", " ~ w".repeat(n / 2)),
    ];
    for chain in chains {
        let source = spec(&[&format!("{{% set v = ['x'] %}}{{% set w = 'y' %}}{chain}")]);
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let agent = compile(&source).unwrap();
                agent.assemble(&send()).unwrap();
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
