//! The shape of settings documents, checked the same way for a write (`PUT …/settings`) and for a
//! preview (the `settings` of a render-like request): every error is a 422 that names the
//! setting it is about.

use promptstack::context::TenantInstructions;
use promptstack_store::SettingsScope;
use serde::Deserialize;
use utoipa::ToSchema;

use crate::problem::{Problem, printable};

/// The settings a tenant's document holds.
const TENANT_KEYS: &[&str] = &["instructions"];
/// The settings an agent's document holds.
const AGENT_KEYS: &[&str] = &["auto_injections"];

/// Unsaved settings to preview, in the shape of the settings documents: the tenant's
/// `instructions` and the agent's `auto_injections`. Each one present replaces the stored value
/// for this answer only; nothing is stored, and the answer says it is a preview. Stage agents
/// only.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // The schema of the field; the field itself is read as JSON and checked.
pub struct SettingsPreview {
    /// As the tenant's settings: `{"enabled": bool, "text": string}`.
    #[schema(value_type = crate::contract::InstructionsSchema, required = false)]
    pub instructions: Option<serde_json::Value>,
    /// As the agent's settings: the `[auto_injections]` table (docs/injections.md).
    #[schema(value_type = crate::contract::AutoInjectionsSchema, required = false)]
    pub auto_injections: Option<serde_json::Value>,
}

/// Previewed settings, checked.
#[derive(Debug, Clone, Default)]
pub struct Preview {
    /// The tenant's instructions in place of the stored ones.
    pub instructions: Option<TenantInstructions>,
    /// The agent's overrides in place of the stored ones.
    pub auto_injections: Option<serde_json::Value>,
}

impl Preview {
    /// Whether anything is previewed.
    pub fn is_empty(&self) -> bool {
        self.instructions.is_none() && self.auto_injections.is_none()
    }
}

/// A 422 `invalid-settings` located at `at` (a dotted path into the request body).
fn invalid(at: &str, message: String) -> Problem {
    let diagnostic =
        promptstack::diagnostic::Diagnostic::error("invalid-settings", message.clone())
            .subject(at.to_owned());
    Problem::unprocessable("invalid-settings", format!("{at}: {message}")).with_diagnostics(
        serde_json::to_value(&diagnostic)
            .into_iter()
            .collect::<Vec<_>>(),
    )
}

/// Checks one setting's value; `at` is where it is in the request body.
fn check_setting(key: &str, value: &serde_json::Value, at: &str) -> Result<(), Problem> {
    match key {
        "instructions" => serde_json::from_value::<TenantInstructions>(value.clone())
            .map(|_| ())
            .map_err(|e| {
                invalid(
                    at,
                    format!("`instructions` must be {{\"enabled\": bool, \"text\": string}}: {e}"),
                )
            }),
        _ if !value.is_object() => Err(invalid(
            at,
            "`auto_injections` must be an object (the `[auto_injections]` table)".to_owned(),
        )),
        _ => Ok(()),
    }
}

/// Checks the keys of `document` against `allowed` and each value's shape; `at` names the
/// document in the request body.
fn check_keys(document: &serde_json::Value, allowed: &[&str], at: &str) -> Result<(), Problem> {
    let Some(object) = document.as_object() else {
        return Err(invalid(at, "the document must be a JSON object".to_owned()));
    };
    for (key, value) in object {
        let here = format!("{at}.{}", printable(key));
        if !allowed.contains(&key.as_str()) {
            return Err(invalid(
                &here,
                format!(
                    "unknown setting `{}`; this document holds {}",
                    printable(key),
                    allowed.join(", ")
                ),
            ));
        }
        check_setting(key, value, &here)?;
    }
    Ok(())
}

/// Checks a settings write's document for its scope.
pub fn check_document(scope: &SettingsScope, document: &serde_json::Value) -> Result<(), Problem> {
    let allowed = match scope {
        SettingsScope::Tenant => TENANT_KEYS,
        SettingsScope::Agent(_) => AGENT_KEYS,
    };
    check_keys(document, allowed, "document")
}

/// Reads a render-like request's `settings`: both documents' keys, each checked as a write
/// checks it.
pub fn preview(settings: Option<&serde_json::Value>) -> Result<Preview, Problem> {
    let Some(settings) = settings else {
        return Ok(Preview::default());
    };
    let allowed: Vec<&str> = TENANT_KEYS.iter().chain(AGENT_KEYS).copied().collect();
    check_keys(settings, &allowed, "settings")?;
    let mut preview = Preview::default();
    if let Some(value) = settings.get("instructions") {
        let mut instructions: TenantInstructions = serde_json::from_value(value.clone())
            .map_err(|e| invalid("settings.instructions", e.to_string()))?;
        // As for stored instructions: the server says what is available, not the request.
        instructions.unavailable = None;
        preview.instructions = Some(instructions);
    }
    if let Some(value) = settings.get("auto_injections") {
        preview.auto_injections = Some(value.clone());
    }
    Ok(preview)
}
