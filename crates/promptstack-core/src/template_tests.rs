//! The template layer's differential tests that need a whole agent or a send context: wherever
//! a plan or a gate's code answers, over the examples and over generated sends, minijinja
//! answers the same. They read the layer through its `testing` hooks (`promptstack-template`'s
//! feature of that name, which only these tests enable).

use std::cell::Cell;
use std::collections::BTreeMap;

use promptstack_template::spec::{Stability, Trust, VariableSpec};
use promptstack_template::testing;
use promptstack_template::{
    Context, Declared, GateContext, SimpleGate, TemplateSet, Val, VariableFacts, Variables,
    Whitespace,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::context::SendContext;
use crate::root::{Root, RootSources, VARIABLES};
use crate::toolset::Toolset;

/// Every template every example send renders, rendered both ways: wherever the plan answers,
/// minijinja writes the same bytes and counts the same empty emissions.
#[test]
#[allow(clippy::disallowed_methods)] // The test reads the examples from disk.
fn examples_render_as_minijinja_does() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut examples: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.join("agent.toml").is_file())
        .collect();
    examples.sort();
    let (mut renders, mut answered) = (0, 0);
    testing::record_renders();
    let mut report = Vec::new();
    for example in &examples {
        let spec = std::fs::read(example.join("agent.toml")).unwrap();
        // Registry capabilities sit next to the spec, as the command line reads them.
        let mut registry = crate::inject::manifests::Registry::new();
        if let Ok(entries) = std::fs::read_dir(example.join("capabilities")) {
            for entry in entries {
                let path = entry.unwrap().path();
                let text = std::fs::read_to_string(&path).unwrap();
                let manifest = crate::inject::manifests::Manifest::from_toml(
                    &text,
                    &path.display().to_string(),
                )
                .unwrap();
                registry.insert(manifest);
            }
        }
        let agent = crate::Agent::from_source_with_registry(
            &spec,
            "agent.toml",
            crate::SpecFormat::Toml,
            &registry,
        )
        .unwrap();
        let set = &agent.inner.templates;
        let (planned_templates, templates) = set.planned();
        let mut sends: Vec<_> = std::fs::read_dir(example.join("sends"))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        sends.sort();
        for send in sends {
            let name = send.file_name().unwrap().to_string_lossy().into_owned();
            let ctx = SendContext::from_json(&std::fs::read(&send).unwrap(), &name).unwrap();
            testing::take_renders();
            // A send may fail (the examples include broken ones); its renders still count.
            let _ = agent.assemble(&ctx);
            for testing::Render {
                template,
                context,
                planned,
            } in testing::take_renders()
            {
                renders += 1;
                if let Some(written) = planned {
                    answered += 1;
                    assert_eq!(
                        Ok(&written),
                        set.render_with_engine(&template, &context).as_ref(),
                        "{} {name}: template `{template}`",
                        example.display()
                    );
                }
            }
        }
        let example = example.file_name().unwrap().to_string_lossy().into_owned();
        report.push(format!("{example}: {planned_templates} of {templates}"));
        if example == "pi-compat" {
            assert_eq!(
                planned_templates, templates,
                "every pi-compat template is planned"
            );
        }
    }
    println!(
        "planned templates: {}; {answered} of {renders} renders answered by a plan",
        report.join(", ")
    );
    assert!(answered * 2 > renders, "{answered} of {renders}");
}

/// Texts with markup, paths with either separator, empty ones.
fn text() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        "a",
        "read",
        "x<y & \"z\"",
        "C:\\dir\\f.md",
        "/s/SKILL.md",
        "a</F >b</project_context",
    ])
    .prop_map(str::to_owned)
}

/// A send with skills (some hidden, some with a slug or a location), context files, paths and
/// variables (some declared, some stable, some with defaults), as JSON.
fn send() -> impl Strategy<Value = (serde_json::Value, BTreeMap<String, VariableSpec>)> {
    let skill = (
        text(),
        prop::option::of(text()),
        text(),
        prop::collection::vec(text(), 0..3),
        prop::collection::vec(
            prop::sample::select(vec!["*", "docs.example.com", "*.example.com"]),
            0..2,
        ),
        any::<bool>(),
        prop::option::of(text()),
    )
        .prop_map(|(name, slug, description, tags, sites, hidden, location)| {
            let mut skill = serde_json::json!({
                "name": name, "description": description, "tags": tags, "sites": sites,
                "disable_model_invocation": hidden, "instructions": description,
            });
            if let Some(slug) = slug {
                skill["slug"] = slug.into();
            }
            if let Some(location) = location {
                skill["location"] = location.into();
            }
            skill
        });
    let file = (text(), text())
        .prop_map(|(path, content)| serde_json::json!({"path": path, "content": content}));
    let json = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        (0i64..3).prop_map(serde_json::Value::from),
        text().prop_map(serde_json::Value::from),
        prop::collection::vec(text(), 0..3).prop_map(serde_json::Value::from),
        prop::collection::btree_map(text(), text(), 0..3).prop_map(|map| serde_json::json!(map)),
    ];
    let variable = (
        prop::option::of(json.clone()),
        prop::option::of(json),
        any::<bool>(),
    );
    (
        prop::collection::vec(skill, 0..4),
        prop::collection::vec(file, 0..3),
        prop::option::of(text()),
        prop::collection::btree_map(
            prop::sample::select(vec!["x", "y", "tools"]),
            variable,
            0..3,
        ),
    )
        .prop_map(|(skills, files, cwd, variables)| {
            let mut send = serde_json::json!({
                "now": "2026-03-14T21:26:53-05:00",
                "model": {"id": "m", "name": "M", "provider": "openai"},
                "skills": skills, "context_files": files,
            });
            if let Some(cwd) = cwd {
                send["cwd"] = cwd.into();
            }
            let mut declared = BTreeMap::new();
            let mut sent = serde_json::Map::new();
            for (name, (value, default, stable)) in variables {
                if let Some(value) = value {
                    sent.insert(name.to_owned(), value);
                }
                declared.insert(
                    name.to_owned(),
                    VariableSpec {
                        stability: if stable {
                            Stability::Stable
                        } else {
                            Stability::Volatile
                        },
                        trust: Trust::User,
                        shape: None,
                        default,
                        description: None,
                    },
                );
            }
            send["variables"] = serde_json::Value::Object(sent);
            (send, declared)
        })
}

/// Templates and gates over the borrowed roots: attributes, items, loops, tests,
/// containment, comparisons and filters, some of which fall back to template values.
const TEMPLATES: &[&str] = &[
    "{% for s in skills %}{{ s.name }}|{{ s.slug }}|{{ s.description | escape_xml }}|{{ s.instructions }}|{{ s.location }}|{% for t in s.tags + s.sites %}{{ t }},{% endfor %}{% endfor %}",
    "{% if skills %}y{% else %}n{% endif %}{% if context_files %}c{% endif %}{% if variables %}v{% endif %}{% if skills and skills[0] %}s{% endif %}",
    "{% if 'a' in skills[0]['tags'] %}t{% endif %}{{ skills[0]['name'] }}",
    "{% for s in skills if s.location is not none and 'read' not in s.tags %}{{ s.location | posix_path }}{% else %}-{% endfor %}",
    "{% if skills[0] == skills[0] %}eq{% endif %}{% if skills[0]['missing'] is defined %}m{% endif %}{{ skills | guidelines }}",
    "{% for f in context_files %}{{ f.path | posix_path }}:{% if f.content %}{{ f.content }}{% endif %};{% endfor %}{{ context_files[0]['path'] }}",
    "{% for f in context_files %}<f path=\"{{ f.path | escape_xml }}\">{{ f.content | escape_end_tags('f', 'project_context') }}</f>{% endfor %}",
    "{% if 'path' in context_files[0] %}p{% endif %}{% if context_files %}c{% endif %}{{ cwd }}{{ cwd | posix_path }}",
    "{{ variables.x }}{% if variables.y is defined %}d{% endif %}{% if variables.tools %}t{% endif %}",
    "{% if 'x' in variables %}in{% endif %}{{ variables['x'] }}{% for k in variables %}{{ k }}{% endfor %}",
    "{% for t in variables.tools if t in ['read', 'a'] %}{{ t }}{% endfor %}{% if 'read' in variables.tools %}r{% endif %}",
    "{% if variables.x == variables.y %}same{% endif %}{% if variables.x in variables.tools %}i{% endif %}{{ variables.tools['a'] }}",
    "{% set all = (variables.tools if variables.tools is defined else []) + ['a'] %}{% for t in all | guidelines %}{{ t }}{% endfor %}",
    // Locals named like roots, nested loops with a repeated name, a binding in one branch.
    "{% for cwd in [cwd, 'x'] if cwd %}{{ cwd }},{% endfor %}{{ cwd }}{% for skills in skills %}{{ skills.name }}{% endfor %}{{ skills[0]['name'] }}",
    "{% for cwd in ['read', 'x'] %}{% for cwd in [cwd, 'a'] %}{{ cwd }}{% endfor %}{{ cwd }}{% endfor %}{{ cwd }}",
    "{% for variables in [variables, variables] %}{{ variables.x }}{% for variables in variables.tools %}{{ variables }}{% endfor %}{{ variables.y }}{% endfor %}{{ variables.x }}",
    "{{ variables.x }}{% if variables.y %}{% set variables = variables.tools %}{% endif %}{% if variables.x is defined %}{{ variables.x }}{% endif %}",
    "{% if context_files %}{% set skills = context_files %}{% endif %}{% for s in skills %}{{ s.path if s.path is defined else s.name }}{% endfor %}",
    // The clock, read where it lies: its fields, a missing one, a subscript, `utc`.
    "{{ now.date }} {{ now.time }} {{ now.minute }} {{ now.weekday }} {{ now.month }} {{ now.offset }} {{ now.rfc3339 }}{% if now.missing is defined %}m{% endif %}{% if 'date' in now and now %}d{% endif %}{{ now['time'] }}{{ now.utc.date }}{{ now.utc.rfc3339 }}",
];

/// What a stable render's context would hold: every root (borrowed where `Root::read`
/// borrows) and the variables of the given stability.
fn roots<'a>(
    sources: &RootSources<'a>,
    facts: &'a VariableFacts<'a>,
    only_stable: bool,
) -> [Context<'a>; 2] {
    let variables = Variables { facts, only_stable };
    let read = |root: Root| root.read(sources);
    let borrowed: Vec<_> = Root::ALL
        .into_iter()
        .map(|root| (root.name(), read(root)))
        .chain([(VARIABLES, Val::Variables(variables))])
        .collect();
    let built: Vec<_> = borrowed
        .iter()
        .map(|(name, value)| (*name, Val::Value(value.to_value())))
        .collect();
    [Context::new(borrowed), Context::new(built)]
}

/// Over generated sends: a borrowed root is the value the root builds, and wherever a plan
/// or a simple gate answers from the borrowed roots, minijinja renders the same, whether
/// `variables.NAME` is read by name or by the place it was compiled to against the send's
/// declarations.
#[test]
fn borrowed_roots_render_as_minijinja_does() {
    let mut set = TemplateSet::new(Whitespace::default());
    for (i, source) in TEMPLATES.iter().enumerate() {
        set.add(format!("t{i}"), (*source).to_owned()).unwrap();
    }
    let unplanned: Vec<_> = (0..TEMPLATES.len())
        .filter(|i| !set.has_plan(&format!("t{i}")))
        .map(|i| TEMPLATES[i])
        .collect();
    assert!(unplanned.is_empty(), "not planned: {unplanned:?}");
    let gates: Vec<_> = [
        "skills and 'read' in variables.tools",
        "skills",
        "not variables",
        "context_files and not cwd",
        "variables.x == 'a' or variables.y is none",
        "'x' in variables and variables.tools",
        "now and 'utc' in now and now.date",
    ]
    .into_iter()
    .map(|expression| {
        let gate = SimpleGate::parse(expression, &Declared::default()).unwrap();
        (expression, gate)
    })
    .collect();
    for (i, (expression, _)) in gates.iter().enumerate() {
        set.add_gate(format!("g{i}"), expression).unwrap();
    }
    let answered = Cell::new(0u32);
    let mut runner = TestRunner::new(Config {
        cases: 600,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(
            &(send(), any::<bool>()),
            |((json, declared), only_stable)| {
                let ctx = SendContext::from_json(json.to_string().as_bytes(), "send.json")
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let toolset = Toolset::default();
                let sources = RootSources {
                    ctx: &ctx,
                    toolset: &toolset,
                    mcp: None,
                };
                for root in Root::ALL {
                    prop_assert_eq!(root.read(&sources).to_value(), root.value(&sources));
                }
                // The same templates and gates compiled against these declarations, read
                // by place from facts of the same table (and by name from any other).
                let by_place = testing::declared(&declared);
                let placed_plans: Vec<_> = TEMPLATES
                    .iter()
                    .map(|source| testing::Plan::compile(&set, source, &by_place).unwrap())
                    .collect();
                let placed_gates: Vec<_> = gates
                    .iter()
                    .map(|(expression, _)| SimpleGate::parse(expression, &by_place).unwrap())
                    .collect();
                let mut atoms = testing::GateAtoms::default();
                let codes: Vec<_> = placed_gates.iter().map(|g| atoms.compile(g)).collect();
                let unplaced = Declared::default();
                let by_name = VariableFacts::new(&unplaced, &declared, &ctx.variables);
                let placed = VariableFacts::new(&by_place, &declared, &ctx.variables);
                let undeclared = ctx.variables.keys().any(|k| !declared.contains_key(k));
                prop_assert_eq!(by_name.any_undeclared(), undeclared);
                prop_assert_eq!(placed.any_undeclared(), undeclared);
                prop_assert_eq!(placed.misfit(), by_name.misfit());
                let contexts = roots(&sources, &by_name, only_stable)
                    .into_iter()
                    .chain(roots(&sources, &placed, only_stable));
                for context in contexts {
                    for (i, source) in TEMPLATES.iter().enumerate() {
                        let name = format!("t{i}");
                        let written = [
                            set.render_planned(&name, &context),
                            placed_plans[i].render(&set, &context),
                        ];
                        for written in written {
                            let Some(written) = written else { continue };
                            answered.set(answered.get() + 1);
                            let engine = set.render_with_engine(&name, context.value());
                            prop_assert_eq!(Ok(written), engine, "{}", source);
                        }
                    }
                    // The gates' code, over atoms compiled against these declarations,
                    // decides as each gate alone does.
                    let gate_context = GateContext::new(&context);
                    for (code, gate) in codes.iter().zip(&placed_gates) {
                        prop_assert_eq!(
                            atoms.decide(code, &gate_context),
                            testing::decide(gate, &context)
                        );
                    }
                    for (i, (expression, gate)) in gates.iter().enumerate() {
                        for gate in [gate, &placed_gates[i]] {
                            let Some(open) = testing::decide(gate, &context) else {
                                continue;
                            };
                            let engine = set.gate_with_engine(&format!("g{i}"), context.value());
                            prop_assert_eq!(Ok(open), engine, "{}", expression);
                        }
                    }
                }
                Ok(())
            },
        )
        .unwrap();
    assert!(answered.get() > 2000, "{} renders answered", answered.get());
}
