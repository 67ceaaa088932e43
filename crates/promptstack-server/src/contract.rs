//! The schemas of the OpenAPI document that come from the engine's own JSON Schemas or from the
//! store's name rules, so that the document states what the server accepts, exactly: the send
//! context (the schema `promptstack schema send` prints and the inspector validates against), the
//! settings documents, the path names and the paging of listings.
//!
//! utoipa's schema model has no place for every JSON Schema keyword the engine's schemas use
//! (`const`, `not`, `$ref` beside other keywords, …), so those schemas are carried as raw JSON in
//! a schema object without a type of its own: they are written out byte for byte as the engine
//! generates them, with `#/$defs/…` references rewritten to the document's components.

// The schema-only types below describe JSON read as `serde_json::Value` and checked by hand.
#![allow(dead_code)]

use std::borrow::Cow;
use std::sync::LazyLock;

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::openapi::RefOr;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{Object, Schema, SchemaType};
use utoipa::{PartialSchema, ToSchema};

/// Adds to every operation the 503 any request may be answered with: the request outlived
/// `--request-timeout-ms`, or the store or a bounded resource is unavailable. An operation that
/// documents a 503 of its own keeps it.
pub struct Unavailable;

impl utoipa::Modify for Unavailable {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{ContentBuilder, ResponseBuilder};
        conversation(openapi);
        if let Some(components) = openapi.components.as_mut() {
            components.schemas.values_mut().for_each(unsigned);
        }
        for item in openapi.paths.paths.values_mut() {
            for operation in operations(item) {
                for parameter in operation.parameters.iter_mut().flatten() {
                    if let Some(schema) = parameter.schema.as_mut() {
                        unsigned(schema);
                    }
                }
            }
        }
        let response = ResponseBuilder::new()
            .description(
                "The request took longer than the server's `--request-timeout-ms` (`timeout`), or \
                 the store or a bounded resource is unavailable",
            )
            .content(
                crate::problem::PROBLEM_JSON,
                ContentBuilder::new()
                    .schema(Some(utoipa::openapi::Ref::from_schema_name("Problem")))
                    .build(),
            )
            .build();
        for item in openapi.paths.paths.values_mut() {
            for operation in operations(item) {
                operation
                    .responses
                    .responses
                    .entry("503".to_owned())
                    .or_insert_with(|| response.clone().into());
            }
        }
    }
}

/// Every operation of a path, whatever its method.
fn operations(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        &mut item.get,
        &mut item.put,
        &mut item.post,
        &mut item.delete,
        &mut item.options,
        &mut item.head,
        &mut item.patch,
        &mut item.trace,
    ]
    .into_iter()
    .flatten()
}

/// Types the `conversation` of request options (`RequestOptionsBody`, a type of the facade that
/// knows no schema of it) as the engine's `Conversation`, with its definitions as components.
fn conversation(openapi: &mut utoipa::openapi::OpenApi) {
    let components = openapi.components.get_or_insert_with(Default::default);
    let Some(RefOr::T(Schema::Object(options))) = components.schemas.get_mut("RequestOptionsBody")
    else {
        return;
    };
    options.properties.insert(
        "conversation".to_owned(),
        raw(serde_json::json!({
            "description": "The conversation so far: `{\"messages\": [...]}`.",
            "oneOf": [
                { "type": "null" },
                { "$ref": "#/components/schemas/Conversation" },
            ],
        })),
    );
    components
        .schemas
        .insert("Conversation".to_owned(), raw(CONVERSATION.root.clone()));
    for (name, def) in &CONVERSATION.defs {
        components.schemas.insert(name.clone(), raw(def.clone()));
    }
}

pub use promptstack::command::{U64Schema, whole};

/// A schema carried as raw JSON Schema.
fn raw(value: Value) -> RefOr<Schema> {
    let mut extensions = Extensions::default();
    if let Value::Object(map) = value {
        extensions.extend(map);
    }
    let mut object = Object::default();
    object.schema_type = SchemaType::AnyValue;
    object.extensions = Some(extensions);
    RefOr::T(Schema::Object(object))
}

/// The range of an integer `format` the engine's schemas use.
fn format_range(format: &str) -> Option<(Value, Value)> {
    Some(match format {
        "uint32" => (0.into(), u32::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "uint64" => (0.into(), u64::MAX.into()),
        "int64" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// Rewrites every `$ref` to `#/$defs/NAME` in `value` to `#/components/schemas/NAME`, and writes
/// out the range each integer `format` states as `minimum` and `maximum` (JSON Schema leaves
/// formats such as `uint32` unchecked; the reader holds the value in that type).
fn rebase(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get_mut("$ref")
                && let Some(name) = reference.strip_prefix("#/$defs/")
            {
                *reference = format!("#/components/schemas/{name}");
            }
            if let Some((min, max)) = map
                .get("format")
                .and_then(Value::as_str)
                .and_then(format_range)
            {
                map.entry("minimum").or_insert(min);
                map.entry("maximum").or_insert(max);
            }
            map.values_mut().for_each(rebase);
        }
        Value::Array(items) => items.iter_mut().for_each(rebase),
        _ => {}
    }
}

/// The send context's schema, split into its root and its definitions, references rebased.
struct Split {
    root: Value,
    defs: Map<String, Value>,
}

static SEND: LazyLock<Split> = LazyLock::new(|| split(promptstack::SendContext::json_schema()));

/// The conversation of a request's `options`, as the engine reads it.
static CONVERSATION: LazyLock<Split> = LazyLock::new(|| {
    split(
        serde_json::to_value(schemars::schema_for!(promptstack::provider::Conversation))
            .unwrap_or_default(),
    )
});

/// `schema` split into its root and its definitions, references rebased.
fn split(mut root: Value) -> Split {
    let mut defs = Map::new();
    if let Value::Object(map) = &mut root {
        map.remove("$schema");
        if let Some(Value::Object(found)) = map.remove("$defs") {
            defs = found;
        }
    }
    rebase(&mut root);
    for def in defs.values_mut() {
        rebase(def);
    }
    Split { root, defs }
}

/// The names of the send schema's definitions, which the document holds as components.
pub fn send_definitions() -> impl Iterator<Item = (&'static str, &'static Value)> {
    SEND.defs.iter().map(|(name, def)| (name.as_str(), def))
}

/// Registers `T`'s schema under its name, and the schemas it refers to.
pub(crate) fn register<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((T::name().into_owned(), T::schema()));
    T::schemas(schemas);
}

/// The schema of `T`'s component, with `any_of` the requirements between its fields that the
/// derived schema cannot state.
pub(crate) fn constrained<T: ToSchema>(any_of: Value) -> RefOr<Schema> {
    raw(serde_json::json!({
        "allOf": [{ "$ref": format!("#/components/schemas/{}", T::name()) }],
        "anyOf": any_of,
    }))
}

/// The send context, as `promptstack schema send` prints it (`SendContext` and its definitions).
pub struct SendContextSchema;

impl PartialSchema for SendContextSchema {
    fn schema() -> RefOr<Schema> {
        raw(SEND.root.clone())
    }
}

impl ToSchema for SendContextSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("SendContext")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        for (name, def) in &SEND.defs {
            schemas.push((name.clone(), raw(def.clone())));
        }
    }
}

/// How many files and example sends a bundle may hold: its schemas state it, and
/// [`crate::bundle::Bundle`] keeps to it.
pub const MAX_BUNDLE_ENTRIES: usize = 256;

/// A bundle's example sends by name: at most [`MAX_BUNDLE_ENTRIES`] send contexts.
pub struct BundleSendsSchema;

impl PartialSchema for BundleSendsSchema {
    fn schema() -> RefOr<Schema> {
        raw(serde_json::json!({
            "type": "object",
            "description": "Example send contexts by name: at most 256.",
            "additionalProperties": { "$ref": "#/components/schemas/SendContext" },
            "maxProperties": MAX_BUNDLE_ENTRIES,
        }))
    }
}

impl ToSchema for BundleSendsSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("BundleSends")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        register::<SendContextSchema>(schemas);
    }
}

/// The body of `fence`, with what its fields require of each other: checking takes only
/// `text`; wrapping takes a `kind`, and an `origin` unless the kind is `tool-result`.
pub struct FenceRequestSchema;

impl PartialSchema for FenceRequestSchema {
    fn schema() -> RefOr<Schema> {
        constrained::<promptstack::command::FenceRequest>(serde_json::json!([
            {
                "properties": { "check": { "const": true } },
                "required": ["check"],
            },
            {
                "properties": { "kind": { "const": "tool-result" } },
                "required": ["kind"],
            },
            {
                "properties": {
                    "kind": { "$ref": "#/components/schemas/FenceKind" },
                    "origin": { "type": "string" },
                },
                "required": ["kind", "origin"],
            },
        ]))
    }
}

impl ToSchema for FenceRequestSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("FenceBody")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        register::<promptstack::command::FenceRequest>(schemas);
    }
}

/// Writes out the range of unsigned integers, which utoipa gives the format of the signed type
/// of their width (`int32` for a `u32`: at most 2^31 - 1, where the server reads up to 2^32 - 1),
/// in `schema` and every schema within it.
fn unsigned(schema: &mut RefOr<Schema>) {
    use utoipa::openapi::schema::{ArrayItems, KnownFormat, SchemaFormat};
    let RefOr::T(schema) = schema else {
        return;
    };
    match schema {
        Schema::Object(object) => {
            let zero = |n: &utoipa::Number| match n {
                utoipa::Number::Int(n) => *n == 0,
                utoipa::Number::UInt(n) => *n == 0,
                utoipa::Number::Float(n) => *n == 0.0,
            };
            let unsigned_from = object.minimum.as_ref().is_some_and(zero);
            let max: Option<u64> = match &object.format {
                Some(SchemaFormat::KnownFormat(KnownFormat::Int32)) if unsigned_from => {
                    Some(u32::MAX.into())
                }
                Some(SchemaFormat::KnownFormat(KnownFormat::Int64)) if unsigned_from => {
                    Some(u64::MAX)
                }
                _ => None,
            };
            if let Some(max) = max {
                object.format = None;
                if object.maximum.is_none() {
                    let mut extensions = object.extensions.take().unwrap_or_default();
                    extensions.insert("maximum".to_owned(), max.into());
                    object.extensions = Some(extensions);
                }
            }
            object.properties.values_mut().for_each(unsigned);
            if let Some(additional) = object.additional_properties.as_deref_mut()
                && let utoipa::openapi::schema::AdditionalProperties::RefOr(inner) = additional
            {
                unsigned(inner);
            }
        }
        Schema::Array(array) => {
            if let ArrayItems::RefOrSchema(items) = &mut array.items {
                unsigned(items);
            }
        }
        Schema::OneOf(one) => one.items.iter_mut().for_each(unsigned),
        Schema::AllOf(all) => all.items.iter_mut().for_each(unsigned),
        Schema::AnyOf(any) => any.items.iter_mut().for_each(unsigned),
        _ => {}
    }
}

/// A reference to one of the send schema's definitions, named `NAME` there.
fn send_definition(name: &str) -> Value {
    serde_json::json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// The tenant's instructions: `{"enabled": bool, "text": string}`, as the send's
/// `tenant_instructions` (`TenantInstructions` of the send schema).
pub struct InstructionsSchema;

impl PartialSchema for InstructionsSchema {
    fn schema() -> RefOr<Schema> {
        raw(send_definition("TenantInstructions"))
    }
}

impl ToSchema for InstructionsSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("TenantInstructions")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        SendContextSchema::schemas(schemas);
    }
}

/// An agent's `[auto_injections]` overrides: a table (docs/injections.md).
#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = AutoInjections)]
pub struct AutoInjectionsSchema {}

/// A tenant's settings document.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TenantSettings)]
pub struct TenantSettingsSchema {
    /// The instructions every stage agent of the tenant renders: `{"enabled": bool, "text":
    /// string}`.
    #[schema(value_type = InstructionsSchema, required = false)]
    pub instructions: Option<Value>,
}

/// An agent's settings document.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AgentSettings)]
pub struct AgentSettingsSchema {
    /// The `[auto_injections]` table that replaces the spec's (docs/injections.md).
    #[schema(value_type = AutoInjectionsSchema, required = false)]
    pub auto_injections: Option<Value>,
}

/// A tenant settings write.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = TenantSettingsWrite)]
pub struct TenantSettingsWriteSchema {
    /// The new document.
    pub document: TenantSettingsSchema,
    /// Compare-and-set: the revision being replaced (0: never written).
    #[schema(value_type = Option<U64Schema>)]
    pub expected_revision: Option<u64>,
}

/// An agent settings write.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AgentSettingsWrite)]
pub struct AgentSettingsWriteSchema {
    /// The new document.
    pub document: AgentSettingsSchema,
    /// Compare-and-set: the revision being replaced (0: never written).
    #[schema(value_type = Option<U64Schema>)]
    pub expected_revision: Option<u64>,
}

/// A name of the store's agent rule: 1 to 64 lowercase letters, digits, `-`, `_` and `.`,
/// starting and ending with a letter or digit. Credentials are named by the same rule.
pub const NAME_PATTERN: &str = "^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$";

/// A bundle file's path, as `promptstack::spec::check_relative_path` accepts it: components
/// separated by `/`, none empty, `.` or `..`, and no backslash or control character anywhere.
pub const FILE_PATH_PATTERN: &str = concat!(
    r"^(?:[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*",
    r"|\.[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*",
    r"|\.\.[^/\\\x00-\x1f\x7f-\x9f]+)",
    r"(?:/(?:[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*",
    r"|\.[^./\\\x00-\x1f\x7f-\x9f][^/\\\x00-\x1f\x7f-\x9f]*",
    r"|\.\.[^/\\\x00-\x1f\x7f-\x9f]+))*$",
);

/// A version id: a SHA-256 in lowercase hex.
pub const VERSION_PATTERN: &str = "^[0-9a-f]{64}$";

/// A string schema: `description`, and the `pattern` its values match.
fn pattern_schema(description: &str, pattern: &str) -> Value {
    serde_json::json!({
        "type": "string",
        "description": description,
        "pattern": pattern,
    })
}

macro_rules! string_schema {
    ($($(#[$doc:meta])* $ty:ident as $name:literal => $schema:expr;)*) => {$(
        $(#[$doc])*
        pub struct $ty;

        impl PartialSchema for $ty {
            fn schema() -> RefOr<Schema> {
                raw($schema)
            }
        }

        impl ToSchema for $ty {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }
        }
    )*};
}

string_schema! {
    /// An agent's name (the store's rule).
    AgentNameSchema as "AgentName" => pattern_schema(
        "An agent's name: 1 to 64 lowercase letters, digits, `-`, `_` and `.`, \
            starting and ending with a letter or digit.",
        NAME_PATTERN,
    );
    /// A credential's name (the store's rule, as agents').
    CredentialNameSchema as "CredentialName" => pattern_schema(
        "A credential's name: 1 to 64 lowercase letters, digits, `-`, `_` and \
            `.`, starting and ending with a letter or digit.",
        NAME_PATTERN,
    );
    /// A label's name: an agent name that is not a version id.
    LabelNameSchema as "LabelName" => serde_json::json!({
        "type": "string",
        "description": "A label's name: as an agent's name, but not 64 lowercase hex digits \
            (a reference of that shape is read as a version id).",
        "pattern": NAME_PATTERN,
        "not": { "pattern": VERSION_PATTERN },
    });
    /// A version id.
    VersionIdSchema as "VersionId" => pattern_schema(
        "A version id: the SHA-256 of its canonical bundle in lowercase hex.",
        VERSION_PATTERN,
    );
    /// An eval run's id.
    RunIdSchema as "RunId" => pattern_schema(
        "An eval run's id: 16 lowercase hex digits.",
        "^[0-9a-f]{16}$",
    );
    /// What a body's `ref` names: a label or a version id.
    ReferenceSchema as "Reference" => pattern_schema(
        "A label's name or a version id (64 lowercase hex digits).",
        NAME_PATTERN,
    );
    /// The cursor of a listing ordered by name: the last name of the previous page.
    NameCursorSchema as "NameCursor" => pattern_schema(
        "The `next` of the previous page: a name.",
        NAME_PATTERN,
    );
    /// The cursor of a listing ordered by time: a position.
    PositionCursorSchema as "PositionCursor" => pattern_schema(
        "The `next` of the previous page: a position.",
        "^[1-9][0-9]{0,17}$",
    );
    /// The streamed body of `cite`.
    CiteBodySchema as "CiteBody" => pattern_schema(
        "One line of JSON, a `CiteHeader` (`{\"sources\": {...}, \"mode\": \
            \"links\"}`), ended by a newline; then the model's text.",
        r"^[^\n]*\n",
    );
    /// A bundle's files by path.
    BundleFilesSchema as "BundleFiles" => serde_json::json!({
        "type": "object",
        "description": "Files by normalised relative path (no empty, `.` or `..` component, no \
            backslash or control character): at most 256, each at most 1 MiB, the spec and the \
            files together at most 4 MiB (in UTF-8 bytes).",
        "propertyNames": { "pattern": FILE_PATH_PATTERN },
        "additionalProperties": { "type": "string" },
        "maxProperties": MAX_BUNDLE_ENTRIES,
    });
    /// A label move's compare-and-set: a version id, or `absent`.
    ExpectedVersionSchema as "ExpectedVersion" => serde_json::json!({
        "description": "The version id the label must point at now, or `absent` when it must \
            not exist yet.",
        "anyOf": [
            { "$ref": "#/components/schemas/VersionId" },
            { "const": "absent" },
        ],
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::served;

    fn document() -> Value {
        serde_json::to_value(crate::openapi()).unwrap()
    }

    #[test]
    fn the_send_schema_is_the_engines_with_its_definitions_as_components() {
        let document = document();
        let schemas = &document["components"]["schemas"];
        let engine = promptstack::SendContext::json_schema();
        let defs = engine["$defs"].as_object().unwrap();
        assert!(!defs.is_empty());
        let mut root = engine.clone();
        root.as_object_mut().unwrap().remove("$schema");
        root.as_object_mut().unwrap().remove("$defs");
        let mut expected = root
            .to_string()
            .replace("#/$defs/", "#/components/schemas/");
        assert_eq!(schemas["SendContext"].to_string(), expected);
        // The definitions are the engine's, with the range of each integer format written out.
        let bounded = |mut def: Value| {
            for (format, key) in [
                ("uint32", "/properties/context_window"),
                ("int64", "/properties/id"),
            ] {
                if let Some(Value::Object(field)) = def.pointer_mut(key)
                    && field.get("format").and_then(Value::as_str) == Some(format)
                {
                    let (min, max) = format_range(format).unwrap();
                    field.insert("minimum".to_owned(), min);
                    field.insert("maximum".to_owned(), max);
                }
            }
            def
        };
        for (name, def) in defs {
            expected = def.to_string().replace("#/$defs/", "#/components/schemas/");
            let expected = bounded(serde_json::from_str(&expected).unwrap());
            assert_eq!(schemas[name], expected, "{name}");
        }
        assert_eq!(
            schemas["ModelDescriptor"]["properties"]["context_window"]["maximum"],
            u32::MAX
        );
        assert_eq!(schemas["Tab"]["properties"]["id"]["minimum"], i64::MIN);
        assert_eq!(send_definitions().count(), defs.len());
        // The conversation of request options is the engine's, its definitions as components.
        let conversation =
            serde_json::to_value(schemars::schema_for!(promptstack::provider::Conversation))
                .unwrap();
        let options = &schemas["RequestOptionsBody"]["properties"]["conversation"];
        assert_eq!(
            options["oneOf"][1]["$ref"],
            "#/components/schemas/Conversation"
        );
        for (name, def) in conversation["$defs"].as_object().unwrap() {
            expected = def.to_string().replace("#/$defs/", "#/components/schemas/");
            assert_eq!(schemas[name].to_string(), expected, "{name}");
            assert!(
                defs.get(name).is_none_or(|send| send == def),
                "{name} differs"
            );
        }
        // Every reference of the document resolves.
        let text = document.to_string();
        for reference in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = &reference[..reference.find('"').unwrap()];
            assert!(schemas.get(name).is_some(), "dangling reference to {name}");
        }
        assert!(!text.contains("#/$defs/"));
    }

    #[test]
    fn request_bodies_carry_the_real_schemas() {
        let document = document();
        let schemas = &document["components"]["schemas"];
        for body in [
            "RenderRequest",
            "RequestRequest",
            "ExplainRequest",
            "ToolsRequest",
            "DiffRequest",
        ] {
            assert_eq!(
                schemas[body]["properties"]["send"]["$ref"], "#/components/schemas/SendContext",
                "{body}"
            );
        }
        assert_eq!(
            schemas["LintRequest"]["properties"]["sends"]["items"]["$ref"],
            "#/components/schemas/SendContext"
        );
        assert_eq!(
            schemas["Bundle"]["properties"]["sends"]["$ref"],
            "#/components/schemas/BundleSends"
        );
        assert_eq!(
            schemas["BundleSends"]["additionalProperties"]["$ref"],
            "#/components/schemas/SendContext"
        );
        assert_eq!(
            schemas["Bundle"]["properties"]["files"]["$ref"],
            "#/components/schemas/BundleFiles"
        );
        // Every operation states the 503 of a request past the timeout.
        for (path, item) in document["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                assert!(
                    operation["responses"]["503"].is_object(),
                    "{method} {path} states no 503"
                );
            }
        }
        assert_eq!(schemas["TenantSettings"]["additionalProperties"], false);
        assert_eq!(schemas["AgentSettings"]["additionalProperties"], false);
        assert_eq!(schemas["SettingsPreview"]["additionalProperties"], false);
        let put = &document["paths"]["/v1/settings"]["put"]["requestBody"]["content"]["application/json"]
            ["schema"]["$ref"];
        assert_eq!(put, "#/components/schemas/TenantSettingsWrite");
    }

    #[test]
    fn every_listing_states_the_page_bounds_the_server_keeps() {
        let config = promptstack_store::StoreConfig::default();
        let document = document();
        let mut listings = 0;
        for (path, item) in document["paths"].as_object().unwrap() {
            let Some(parameters) = item["get"]["parameters"].as_array() else {
                continue;
            };
            for parameter in parameters.iter().filter(|p| p["name"] == "limit") {
                listings += 1;
                let schema = &parameter["schema"];
                assert_eq!(schema["minimum"], 1, "{path}");
                assert_eq!(schema["maximum"], config.max_page, "{path}");
                assert_eq!(schema["default"], config.default_page, "{path}");
            }
        }
        assert!(listings >= 4, "{listings}");
    }

    #[test]
    fn the_served_document_states_the_configured_turns() {
        let mut limits = promptstack::limits::Limits::default();
        let turns = "/components/schemas/CacheSimRequest/properties/turns/maximum";
        assert_eq!(
            served(&limits).pointer(turns),
            Some(&Value::from(
                limits.get(promptstack::limits::Limit::SimTurns)
            ))
        );
        assert_eq!(document().pointer(turns), served(&limits).pointer(turns));
        limits.set(promptstack::limits::Limit::SimTurns, 7).unwrap();
        assert_eq!(served(&limits).pointer(turns), Some(&Value::from(7)));
    }

    fn matches(pattern: &str, text: &str) -> bool {
        regex::Regex::new(pattern).unwrap().is_match(text)
    }

    #[test]
    fn the_patterns_are_the_rules_they_state() {
        let names = [
            "a",
            "chat-assistant",
            "a.b_c-d",
            "0",
            "-a",
            "a-",
            ".a",
            "A",
            "a b",
            "",
            "é",
            &"a".repeat(64),
            &"a".repeat(65),
            &"f".repeat(64),
            "production",
        ];
        for name in names {
            let agent = promptstack_store::AgentName::parse(name).is_ok();
            assert_eq!(matches(NAME_PATTERN, name), agent, "{name:?}");
            let credential = promptstack_store::CredentialName::parse(name).is_ok();
            assert_eq!(matches(NAME_PATTERN, name), credential, "{name:?}");
            let label = promptstack_store::LabelName::parse(name).is_ok();
            let by_document = matches(NAME_PATTERN, name) && !matches(VERSION_PATTERN, name);
            assert_eq!(by_document, label, "{name:?}");
            let version = promptstack_store::VersionId::parse(name).is_ok();
            assert_eq!(matches(VERSION_PATTERN, name), version, "{name:?}");
        }
        let paths = [
            "agent.toml",
            "capabilities/x.toml",
            "a/b/c",
            "...",
            ".a",
            "a/.b",
            "..a/b",
            "a..",
            "",
            "/a",
            "a/",
            "a//b",
            ".",
            "..",
            "a/./b",
            "a/../b",
            "./a",
            "a\\b",
            "a\u{0}b",
            "a\u{7f}",
            "a\u{85}b",
            "a\tb",
            "é/ü",
            "a b",
        ];
        for path in paths {
            let accepted = promptstack::spec::check_relative_path(path).is_ok();
            assert_eq!(matches(FILE_PATH_PATTERN, path), accepted, "{path:?}");
        }
    }
}
