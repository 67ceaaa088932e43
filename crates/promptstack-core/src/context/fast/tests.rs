//! The fast reader against the located one, over generated sends: valid ones, and ones with
//! unknown keys, wrong types, repeated keys, bad shapes, escaped keys, deep nesting, broken
//! bytes. Whatever the fast reader answers, the located reader answers the same; where the
//! located reader accepts a send without an escaped key, the fast reader reads it too.
//!
//! 256 cases by default; `PROPTEST_CASES=N` for more.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{Declined, read};
use crate::SendContext;

/// More variables for the chat-assistant spec (which declares `ask_answers` as a list of
/// objects): one of each other kind of shape, and one without a shape.
const MORE_VARIABLES: &str = r#"
[variables.count]
stability = "volatile"
trust = "platform"
shape = "integer"

[variables.title]
stability = "volatile"
trust = "user"
shape = "string"

[variables.flags]
stability = "volatile"
trust = "platform"
shape = "list of list of bool"

[variables.free]
stability = "volatile"
trust = "platform"
"#;

fn shapes_spec() -> crate::AgentSpec {
    let spec = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/chat-assistant/agent.toml"
    ));
    let text = format!("{spec}\n{MORE_VARIABLES}");
    crate::spec::load::parse(text.as_bytes(), "agent.toml", crate::SpecFormat::Toml)
        .map_err(|error| error.to_string())
        .expect("the test spec parses")
        .spec
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{0,8}",
        "[ -~]{0,12}",
        Just("héllo \u{1F600} \"quoted\" \\ back".to_owned()),
        Just("/research now".to_owned()),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z_]{1,8}",
        Just("now".to_owned()),
        Just("model".to_owned())
    ]
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(name(), inner, 0..4)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn now() -> impl Strategy<Value = Value> {
    prop_oneof![
        24 => Just(json!("2026-11-30T11:20:00+00:00")),
        1 => Just(json!("2026-11-30 09:15:00-00:00")),
        1 => Just(json!("2026-11-30t09:15:00z")),
        1 => Just(json!("0000-01-01T00:00:00Z")),
        1 => Just(json!("2024-02-29T23:59:59.5+23:59")),
        1 => Just(json!("2026-11-30T09:15:00")),
        1 => Just(json!("2026-02-30T09:15:00Z")),
        1 => Just(json!("2026-11-30T09:15:60Z")),
        1 => Just(json!(20261130)),
    ]
}

fn model() -> impl Strategy<Value = Value> {
    (
        text(),
        text(),
        text(),
        prop::option::of(prop_oneof![
            4 => Just(json!("none")),
            4 => Just(json!("native")),
            1 => Just(json!("other")),
            1 => Just(json!({"none": null})),
            1 => Just(json!(null)),
        ]),
        prop::option::of(prop_oneof![
            6 => Just(json!(400000)),
            2 => Just(json!(0)),
            1 => Just(json!(-1)),
            1 => Just(json!(5.0)),
            1 => Just(json!(4294967296u64)),
            2 => Just(json!(null)),
        ]),
    )
        .prop_map(|(id, name, provider, tool_usage, window)| {
            let mut model = json!({"id": id, "name": name, "provider": provider});
            if let Some(tool_usage) = tool_usage {
                model["tool_usage"] = tool_usage;
            }
            if let Some(window) = window {
                model["context_window"] = window;
            }
            model
        })
}

fn coordinate() -> impl Strategy<Value = Value> {
    prop_oneof![
        8 => (-90.0f64..90.0).prop_map(Value::from),
        1 => (-200.0f64..200.0).prop_map(Value::from),
        1 => (-200i64..200).prop_map(Value::from),
        1 => Just(json!(90)),
        1 => Just(json!(-180.0)),
        1 => Just(json!(90.000000001)),
        1 => Just(json!(null)),
    ]
}

fn user() -> impl Strategy<Value = Value> {
    (
        prop::option::of(text()),
        prop::option::of((prop::option::of(text()), coordinate(), coordinate())),
        prop::option::of(text()),
    )
        .prop_map(|(name, location, language)| {
            let mut user = json!({});
            if let Some(name) = name {
                user["name"] = json!(name);
            }
            if let Some((place, latitude, longitude)) = location {
                user["location"] = json!({"latitude": latitude, "longitude": longitude});
                if let Some(place) = place {
                    user["location"]["name"] = json!(place);
                }
            }
            if let Some(language) = language {
                user["language"] = json!(language);
            }
            user
        })
}

fn site() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => Just(json!("docs.example.com")),
        4 => Just(json!("*.example.com")),
        4 => Just(json!("*")),
        4 => Just(json!("https://example.com:8443/api")),
        1 => Just(json!("")),
        1 => Just(json!("a b")),
        1 => Just(json!("ftp://example.com")),
        1 => Just(json!("exa*mple.com")),
    ]
}

fn skill() -> impl Strategy<Value = Value> {
    (
        text(),
        text(),
        prop::option::of(text()),
        prop::collection::vec(site(), 0..3),
        any::<bool>(),
    )
        .prop_map(|(name, description, slug, sites, hidden)| {
            let mut skill = json!({"name": name, "description": description});
            if let Some(slug) = slug {
                skill["slug"] = json!(slug);
            }
            if !sites.is_empty() {
                skill["sites"] = json!(sites);
            }
            if hidden {
                skill["disable_model_invocation"] = json!(true);
            }
            skill
        })
}

fn variables() -> impl Strategy<Value = Value> {
    let value = prop_oneof![
        Just(json!([{"question": "q", "answer": "a"}])),
        Just(json!([1, 2])),
        Just(json!(3)),
        Just(json!(3.5)),
        Just(json!("three")),
        Just(json!([[true], [false, null]])),
        Just(json!([[true], [1]])),
        Just(json!(null)),
        any_json(),
    ];
    prop::collection::btree_map(
        prop_oneof![
            Just("count".to_owned()),
            Just("title".to_owned()),
            Just("flags".to_owned()),
            Just("free".to_owned()),
            Just("ask_answers".to_owned()),
            name(),
        ],
        value,
        0..4,
    )
    .prop_map(|map| Value::Object(map.into_iter().collect()))
}

fn tab() -> impl Strategy<Value = Value> {
    (any::<i32>(), text(), prop::option::of(text())).prop_map(|(id, url, title)| {
        let mut tab = json!({"id": id, "url": url});
        if let Some(title) = title {
            tab["title"] = json!(title);
        }
        tab
    })
}

fn mcp_server() -> impl Strategy<Value = Value> {
    prop_oneof![
        (text(), prop::collection::vec(text(), 0..3)).prop_map(|(server, tools)| {
            let tools: Vec<Value> = tools
                .into_iter()
                .map(|name| json!({"name": name, "input_schema": {"type": "object"}}))
                .collect();
            json!({"server": server, "status": "ready", "tools": tools})
        }),
        (text(), any::<bool>()).prop_map(|(server, timed_out)| json!({
            "server": server,
            "status": "failed",
            "failure": {"stage": "connect", "timed_out": timed_out, "message": "refused"}
        })),
    ]
}

/// A send, valid unless one of its parts is one of the invalid choices above.
fn send() -> impl Strategy<Value = Value> {
    let core = (now(), model(), user(), prop::collection::vec(skill(), 0..3));
    let more = (
        prop::option::of(prop::collection::btree_map(name(), any_json(), 0..3)),
        prop::option::of(prop::collection::btree_map(
            name(),
            (any::<bool>(), any::<bool>()),
            0..3,
        )),
        prop::option::of(text()),
        variables(),
        prop::option::of((prop::option::of(tab()), prop::collection::vec(tab(), 0..2))),
        prop::collection::vec(mcp_server(), 0..2),
        prop::option::of(prop_oneof![
            Just(json!({"enabled": true, "text": "Be brief."})),
            Just(json!({})),
            Just(json!(null)),
        ]),
        prop::option::of(prop_oneof![
            6 => Just(json!({"date_time": false})),
            2 => Just(json!(null)),
            1 => Just(json!(5)),
            1 => Just(json!("x")),
            1 => Just(json!([])),
        ]),
        prop::option::of(any_json()),
    );
    (core, more).prop_map(
        |(
            (now, model, user, skills),
            (
                settings,
                integrations,
                message,
                variables,
                tabs,
                servers,
                tenant,
                injections,
                harness,
            ),
        )| {
            let mut send =
                json!({"now": now, "model": model, "user": user, "variables": variables});
            if !skills.is_empty() {
                send["skills"] = json!(skills);
            }
            if let Some(settings) = settings {
                send["settings"] = json!(settings);
            }
            if let Some(integrations) = integrations {
                let integrations: serde_json::Map<String, Value> = integrations
                    .into_iter()
                    .map(|(name, (connected, enabled))| {
                        (name, json!({"connected": connected, "enabled": enabled}))
                    })
                    .collect();
                send["integrations"] = Value::Object(integrations);
            }
            if let Some(message) = message {
                send["user_message"] = json!(message);
            }
            if let Some((active, referenced)) = tabs {
                send["tabs"] = json!({"referenced": referenced});
                if let Some(active) = active {
                    send["tabs"]["active"] = active;
                }
            }
            if !servers.is_empty() {
                send["mcp_servers"] = json!(servers);
            }
            if let Some(tenant) = tenant {
                send["tenant_instructions"] = tenant;
            }
            if let Some(injections) = injections {
                send["auto_injections"] = injections;
            }
            if let Some(harness) = harness {
                send["harness_state"] = harness;
            }
            send
        },
    )
}

/// The JSON pointers of every object and array in a value, in document order.
fn containers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            out.push(at.clone());
            for (key, child) in map {
                containers(
                    child,
                    format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(items) => {
            out.push(at.clone());
            for (i, child) in items.iter().enumerate() {
                containers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The JSON pointers of every value below the top, in document order.
fn places(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                out.push(here.clone());
                places(child, here, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let here = format!("{at}/{i}");
                out.push(here.clone());
                places(child, here, out);
            }
        }
        _ => {}
    }
}

/// The same value in another JSON type, or a struct written as the array serde would also take.
fn retyped(value: &Value, choice: u8) -> Value {
    match (value, choice % 6) {
        (Value::Object(map), 0) => Value::Array(map.values().cloned().collect()),
        (Value::String(s), 0) => json!({ s.clone(): null }),
        (_, 1) => json!([]),
        (_, 2) => json!({}),
        (_, 3) => json!(null),
        (_, 4) => json!("text"),
        _ => json!(7),
    }
}

/// Writes JSON with optional defects: object number `repeat` writes its first key twice, object
/// number `escape` writes its first key with a `\u` escape.
fn write(
    value: &Value,
    repeat: Option<usize>,
    escape: Option<usize>,
    count: &mut usize,
    out: &mut String,
) {
    match value {
        Value::Object(map) => {
            let index = *count;
            *count += 1;
            out.push('{');
            for (i, (key, child)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if i == 0 && escape == Some(index) && !key.is_empty() {
                    let mut chars = key.chars();
                    let first = chars.next().unwrap_or('a');
                    out.push_str(&format!("\"\\u{:04x}", u32::from(first) & 0xffff));
                    out.push_str(&serde_json::to_string(chars.as_str()).unwrap_or_default()[1..]);
                } else {
                    out.push_str(&serde_json::to_string(key).unwrap_or_default());
                }
                out.push(':');
                write(child, repeat, escape, count, out);
                if i == 0 && repeat == Some(index) {
                    out.push(',');
                    out.push_str(&serde_json::to_string(key).unwrap_or_default());
                    out.push(':');
                    write(child, None, None, &mut 0, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, child) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(child, repeat, escape, count, out);
            }
            out.push(']');
        }
        _ => out.push_str(&serde_json::to_string(value).unwrap_or_default()),
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    None,
    UnknownKey(usize),
    Retype(usize, u8),
    Remove(usize),
    Repeat(usize),
    Escape(usize),
    Deep(usize),
    Byte(usize, u8),
    Pretty,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        10 => Just(Mutation::None),
        2 => any::<usize>().prop_map(Mutation::UnknownKey),
        3 => (any::<usize>(), any::<u8>()).prop_map(|(at, choice)| Mutation::Retype(at, choice)),
        1 => any::<usize>().prop_map(Mutation::Remove),
        2 => any::<usize>().prop_map(Mutation::Repeat),
        1 => any::<usize>().prop_map(Mutation::Escape),
        1 => (60usize..70).prop_map(Mutation::Deep),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Byte(at, byte)),
        1 => Just(Mutation::Pretty),
    ]
}

fn render(mut send: Value, mutation: &Mutation) -> Vec<u8> {
    let mut repeat = None;
    let mut escape = None;
    match *mutation {
        Mutation::None | Mutation::Byte(..) => {}
        Mutation::Pretty => return serde_json::to_vec_pretty(&send).unwrap_or_default(),
        Mutation::UnknownKey(at) => {
            let mut objects = Vec::new();
            containers(&send, String::new(), &mut objects);
            objects.retain(|pointer| send.pointer(pointer).is_some_and(Value::is_object));
            let pointer = &objects[at % objects.len()];
            if let Some(Value::Object(map)) = send.pointer_mut(pointer) {
                map.insert("unexpected".into(), json!(1));
            }
        }
        Mutation::Retype(at, choice) => {
            let mut all = Vec::new();
            places(&send, String::new(), &mut all);
            if let Some(place) = send.pointer_mut(&all[at % all.len()]) {
                *place = retyped(place, choice);
            }
        }
        Mutation::Remove(at) => {
            let mut all = Vec::new();
            places(&send, String::new(), &mut all);
            let pointer = &all[at % all.len()];
            let (parent, key) = pointer.rsplit_once('/').unwrap_or_default();
            match send.pointer_mut(parent) {
                Some(Value::Object(map)) => {
                    map.remove(&key.replace("~1", "/").replace("~0", "~"));
                }
                Some(Value::Array(items)) => {
                    if let Ok(i) = key.parse::<usize>() {
                        items.remove(i);
                    }
                }
                _ => {}
            }
        }
        Mutation::Repeat(at) | Mutation::Escape(at) => {
            let mut objects = Vec::new();
            containers(&send, String::new(), &mut objects);
            let count = objects
                .iter()
                .filter(|pointer| send.pointer(pointer).is_some_and(Value::is_object))
                .count();
            let index = Some(at % count.max(1));
            if matches!(mutation, Mutation::Repeat(_)) {
                repeat = index;
            } else {
                escape = index;
            }
        }
        Mutation::Deep(levels) => {
            let mut deep = json!(1);
            for _ in 0..levels {
                deep = json!([deep]);
            }
            send["settings"] = json!({ "deep": deep });
        }
    }
    let mut out = String::new();
    write(&send, repeat, escape, &mut 0, &mut out);
    let mut bytes = out.into_bytes();
    if let Mutation::Byte(at, byte) = *mutation {
        let at = at % bytes.len();
        bytes[at] = byte;
    }
    bytes
}

/// Whether some key is written with an escape: a string holding a backslash, followed by `:`.
fn has_escaped_key(bytes: &[u8]) -> bool {
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'"' {
            at += 1;
            continue;
        }
        let mut escaped = false;
        at += 1;
        while at < bytes.len() && bytes[at] != b'"' {
            if bytes[at] == b'\\' {
                escaped = true;
                at += 1;
            }
            at += 1;
        }
        at += 1;
        let mut next = at;
        while bytes.get(next).is_some_and(u8::is_ascii_whitespace) {
            next += 1;
        }
        if escaped && bytes.get(next) == Some(&b':') {
            return true;
        }
    }
    false
}

/// Both readers on one input: what the fast one answers, the located one answers the same.
fn agree(
    bytes: &[u8],
    spec: Option<&crate::AgentSpec>,
    escaped: bool,
) -> Result<(), TestCaseError> {
    let located = SendContext::read_located(bytes, "send.json", spec);
    let public = SendContext::read(bytes, "send.json", spec);
    prop_assert_eq!(
        &public,
        &located,
        "the public reader answers as the located one"
    );
    match read(bytes, spec) {
        Ok(context) => {
            prop_assert_eq!(
                Ok(context),
                located,
                "the fast reader read a send differently"
            );
        }
        Err(Declined::Refused) => {
            prop_assert!(
                located.is_err(),
                "the fast reader refused a send the located one reads: {:?}",
                located
            );
        }
        Err(Declined::Undecided) => {
            prop_assert!(escaped, "undecided without an escaped key");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    #[test]
    fn read_equivalence(send in send(), mutation in mutation(), for_spec in any::<bool>()) {
        let bytes = render(send, &mutation);
        let spec = for_spec.then(shapes_spec);
        let escaped = has_escaped_key(&bytes);
        agree(&bytes, spec.as_ref(), escaped)?;
        // Where the located reader accepts a send without an escaped key, the fast one reads it.
        if !escaped && SendContext::read_located(&bytes, "send.json", spec.as_ref()).is_ok() {
            prop_assert!(read(&bytes, spec.as_ref()).is_ok(), "the fast reader did not read a valid send");
        }
    }
}

/// A JSON tree read in place, as a host language's values are.
impl super::SendTree for Value {
    fn kind(&self) -> Option<super::TreeKind> {
        use super::TreeKind;
        Some(match self {
            Value::Object(_) => TreeKind::Object,
            Value::Array(_) => TreeKind::Array,
            Value::String(text) => TreeKind::String {
                json_bytes: text.chars().count() * 6 + 2,
            },
            Value::Number(number) => TreeKind::Number(number.as_f64()?),
            Value::Bool(_) => TreeKind::Bool,
            Value::Null => TreeKind::Null,
        })
    }

    fn entries(
        &self,
        need_text: bool,
        each: &mut dyn FnMut(Option<&str>, usize, &Self) -> bool,
    ) -> bool {
        let Value::Object(map) = self else {
            return false;
        };
        map.iter().all(|(key, value)| {
            each(
                need_text.then_some(key.as_str()),
                key.chars().count() * 6 + 2,
                value,
            )
        })
    }

    fn items(&self, each: &mut dyn FnMut(&Self) -> bool) -> bool {
        let Value::Array(items) = self else {
            return false;
        };
        items.iter().all(each)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::default())]

    /// A send held as a tree is read as the located reader reads its pretty text: to the same
    /// value when accepted, and declined only when that reader refuses it.
    #[test]
    fn tree_equivalence(send in send(), mutation in mutation(), for_spec in any::<bool>()) {
        use serde::Deserialize as _;
        let Ok(tree) = serde_json::from_slice::<Value>(&render(send, &mutation)) else {
            return Ok(());
        };
        let spec = for_spec.then(shapes_spec);
        let pretty = serde_json::to_vec_pretty(&tree).unwrap_or_default();
        let located = SendContext::read_located(&pretty, "send.json", spec.as_ref());
        let read = SendContext::from_tree_for(
            &tree,
            |tree| SendContext::deserialize(tree).ok(),
            spec.as_ref(),
        );
        match read {
            Some(context) => prop_assert_eq!(Ok(context), located, "the tree was read differently"),
            None => prop_assert!(located.is_err(), "the tree reader declined a send the located one reads"),
        }
    }
}

#[test]
fn the_research_send_reads_fast() {
    let bytes = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/chat-assistant/sends/research.json"
    ));
    let spec = shapes_spec();
    for spec in [None, Some(&spec)] {
        let context = read(bytes, spec).expect("the research send is read fast");
        assert_eq!(
            Ok(context),
            SendContext::read_located(bytes, "research.json", spec)
        );
    }
}

#[test]
fn limits_refuse_as_the_located_reader_does() {
    let valid =
        br#"{"now": "2026-11-30T11:20:00Z", "model": {"id": "m", "name": "M", "provider": "p"}}"#;
    assert!(read(valid, None).is_ok());
    let mut large = valid.to_vec();
    large.resize(crate::context::MAX_SEND_BYTES + 1, b' ');
    assert!(read(&large, None) == Err(Declined::Refused));
    assert!(SendContext::from_json(&large, "large.json").is_err());
    let mut broken = valid.to_vec();
    broken[10] = 0xff;
    assert!(read(&broken, None) == Err(Declined::Refused));
    let error = SendContext::from_json(&broken, "broken.json").unwrap_err();
    assert_eq!(error.diagnostics[0].code, "not-utf8");
}
