//! The capabilities the platform ships: their guidance texts, default configuration and tools.
//!
//! Each text is plain text with `{{capability_config.<key>}}` placeholders, substituted from the
//! stage's configuration over the defaults below. Tools are registered whenever the capability is
//! enabled, whatever the overrides say: an override changes only the guidance text.

use serde_json::{Map, Value, json};

use crate::spec::ToolSpec;

/// A built-in capability.
#[derive(Debug)]
pub struct Builtin {
    /// The slug a stage enables it by (and overrides it by).
    pub slug: &'static str,
    /// Whether its guidance carries a compliance rule.
    pub compliance: bool,
    /// Configuration defaults, as `(key, value)`.
    pub defaults: &'static [(&'static str, &'static str)],
    /// Picks the guidance text for a configuration (a capability with roles has one per role).
    text: fn(&Map<String, Value>) -> &'static str,
    /// The tools it contributes for a configuration.
    tools: fn(&Map<String, Value>) -> Vec<ToolSpec>,
}

impl Builtin {
    /// The stage's configuration over the defaults.
    pub fn config(&self, configured: Option<&Map<String, Value>>) -> Map<String, Value> {
        let mut config: Map<String, Value> = self
            .defaults
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
            .collect();
        if let Some(configured) = configured {
            for (k, v) in configured {
                config.insert(k.clone(), v.clone());
            }
        }
        config
    }

    /// The unsubstituted guidance text for a configuration.
    pub fn text(&self, config: &Map<String, Value>) -> &'static str {
        (self.text)(config)
    }

    /// The tools the capability registers for a configuration.
    pub fn tools(&self, config: &Map<String, Value>) -> Vec<ToolSpec> {
        (self.tools)(config)
    }
}

/// Every built-in capability.
pub static BUILTINS: &[Builtin] = &[
    Builtin {
        slug: "payments",
        compliance: true,
        defaults: &[("currency", "the account's currency")],
        text: |_| PAYMENTS,
        tools: |_| {
            vec![tool(
                "take_card_payment",
                "Starts a secure card payment: the caller types the card details on their phone keypad and they go straight to the payment vault. Use it once the caller has agreed to the amount. It returns approved or declined, and the card's last four digits; on an error, tell the caller the payment did not go through and offer to try again once.",
                &[
                    ("amount", "number", "the amount the caller agreed to"),
                    ("description", "string", "what the payment is for"),
                ],
            )]
        },
    },
    Builtin {
        slug: "customer_authentication",
        compliance: false,
        defaults: &[("max_attempts", "3")],
        text: |_| CUSTOMER_AUTHENTICATION,
        tools: |_| {
            vec![tool(
                "verify_customer",
                "Checks one identity detail the caller gave against the account. Use it before discussing or changing anything on the account. It returns verified, not verified, or the next detail to ask for; on an error, apologise and try once more before offering a transfer.",
                &[
                    (
                        "detail",
                        "string",
                        "which detail the caller gave, as the tool asked for it",
                    ),
                    ("value", "string", "what the caller said"),
                ],
            )]
        },
    },
    Builtin {
        slug: "external_consult",
        compliance: false,
        defaults: &[("role", "origin"), ("consultant", "a specialist")],
        text: |config| match config.get("role").and_then(Value::as_str) {
            Some("transfer") => EXTERNAL_CONSULT_TRANSFER,
            _ => EXTERNAL_CONSULT_ORIGIN,
        },
        tools: |config| match config.get("role").and_then(Value::as_str) {
            Some("transfer") => Vec::new(),
            _ => vec![
                tool(
                    "consult_external",
                    "Asks the consultant a question while the caller waits. Use it when the caller needs an answer only the consultant can give. It returns the consultant's answer; if it times out, tell the caller and offer a transfer instead.",
                    &[
                        (
                            "summary",
                            "string",
                            "the situation in two or three sentences",
                        ),
                        ("question", "string", "what the consultant should answer"),
                    ],
                ),
                tool(
                    "transfer_call",
                    "Hands the call over to the consultant, with a summary they read before speaking. Use it when the consultant should talk to the caller directly. If it fails, stay on the call and tell the caller.",
                    &[("summary", "string", "what the consultant needs to know")],
                ),
            ],
        },
    },
    Builtin {
        slug: "end_session",
        compliance: false,
        defaults: &[],
        text: |_| END_SESSION,
        tools: |_| {
            vec![tool(
                "end_session",
                "Ends the call. Use it only after saying goodbye, when the caller has nothing else. If it fails, say goodbye again and wait for the caller to hang up.",
                &[("reason", "string", "why the call ends, for the call log")],
            )]
        },
    },
];

/// The built-in capability with this slug.
pub fn builtin(slug: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.slug == slug)
}

/// A built-in tool whose parameters, each `(name, JSON type, description)`, are all required.
fn tool(name: &str, description: &str, parameters: &[(&str, &str, &str)]) -> ToolSpec {
    let properties: Map<String, Value> = parameters
        .iter()
        .map(|(name, kind, about)| {
            let property = json!({"type": kind, "description": about});
            ((*name).to_owned(), property)
        })
        .collect();
    let required: Vec<&str> = parameters.iter().map(|(name, ..)| *name).collect();
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters: json!({"type": "object", "properties": properties, "required": required}),
        verb: None,
        cacheable: false,
        budget: None,
        results: crate::spec::ResultTrust::Trusted,
        fence: crate::spec::ResultFence::ToolResult,
        display_name: None,
        category: None,
        icon: None,
        when: None,
        read_only: false,
        requires: Default::default(),
    }
}

const PAYMENTS: &str = "\
Taking payments
1. Card numbers, security codes and expiry dates must never pass through this conversation. Do not ask the caller to say, spell or type them to you, and if they start reading them out, stop them politely and move to secure keypad entry. Never repeat card details back.
2. Before a payment, state the amount in {{capability_config.currency}} and what it pays for, and wait for a clear yes.
3. Take every payment with `take_card_payment`: the caller enters the card on their keypad and only the result comes back to you.
4. Report the result with what the tool returned (approved or declined, and the last four digits when given). Never guess why a payment was declined.";

const CUSTOMER_AUTHENTICATION: &str = "\
Verifying the caller
- Verify the caller with `verify_customer` before you discuss or change anything on their account.
- Ask for one detail at a time, only the details the tool asks for, and never hint at the expected answer or say which detail was wrong.
- After {{capability_config.max_attempts}} failed attempts, stop verifying and offer to transfer the caller or end the call.";

const EXTERNAL_CONSULT_ORIGIN: &str = "\
Consulting {{capability_config.consultant}}
- When the caller needs an answer only {{capability_config.consultant}} can give, call `consult_external` with a short summary and the question, and tell the caller you are checking with a colleague.
- Never make up the consultant's answer; relay it in your own words.
- When the consultant should speak with the caller directly, call `transfer_call` with a summary and tell the caller who they will be speaking with.";

const EXTERNAL_CONSULT_TRANSFER: &str = "\
Taking over a transferred call
- This call was handed to you by another agent, with a summary in the conversation. Do not ask the caller to repeat what the summary covers.
- Introduce yourself once, confirm in one sentence what you understood, and continue from there.";

const END_SESSION: &str = "\
Ending the call
- When the caller's needs are met and they have nothing else, say a short goodbye and call `end_session`.
- Never end the call while a payment, a verification or a transfer is in progress, or while the caller is still speaking.";
