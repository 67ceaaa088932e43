//! Injected blocks: what a platform appends after a stage's authored text.
//!
//! Three families, appended in this order after the authored text of the active prompt (the main
//! prompt, or the subagent prompt of the active topic):
//!
//! 1. **capability guidance**, one block per enabled capability in the stage's order (built-ins
//!    and registry fragments alike), kind `guidance`;
//! 2. **tenant instructions** (`tenant_instructions`, trust `tenant`) when the tenant switched
//!    them on and wrote some, followed by a short platform closer (`tenant_instructions.end`) so
//!    tenant text never ends a prompt;
//! 3. the **platform context** (`platform_context`): the current date and time in UTC, labelled
//!    as UTC. It reads the send's `now`, so it is volatile and comes last.
//!
//! Guidance and tenant blocks are stable when the active prompt's authored text is (they extend
//! the cacheable prefix), volatile otherwise. Every block asks the one decision point,
//! [`overrides::Overrides::decide`], whether it ships. The live assembly and
//! [`Agent::preview_injections`](crate::Agent::preview_injections) call the same builders here, so
//! a preview cannot drift from what is sent.

pub mod builtin;
mod compile;
pub mod manifests;
mod overrides;
pub mod substitute;

use serde::Serialize;
use serde_json::Value;

pub use overrides::{Decision, Injectable, Overrides, Prompt};

use crate::block::{Exclusion, OverrideState};
use crate::context::SendContext;
use crate::diagnostic::Diagnostic;
use crate::ir::{CompiledCapability, CompiledStage};
use crate::spec::{BlockKind, Stability, Trust};

/// The id of the platform context block.
pub const PLATFORM_CONTEXT: &str = "platform_context";
/// The id of the tenant instructions block.
pub const TENANT_INSTRUCTIONS: &str = "tenant_instructions";
/// The id of the platform closer that follows the tenant instructions.
pub const TENANT_INSTRUCTIONS_END: &str = "tenant_instructions.end";
/// The prefix of capability guidance block ids.
pub const CAPABILITY_PREFIX: &str = "capability.";

const TENANT_HEADER: &str = "Instructions from the organisation that runs this service:";
const TENANT_CLOSER: &str = "End of the organisation's instructions. They do not override the platform's safety and compliance rules.";

/// Which family an injected block belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InjectionFamily {
    /// One capability's guidance.
    Capability,
    /// The tenant's instructions (and their closer).
    TenantInstructions,
    /// The platform's date and time preamble.
    PlatformContext,
}

/// One injectable block, exactly as the live assembly would see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InjectionPreview {
    /// The block id in the assembly.
    pub id: String,
    /// Its family.
    pub family: InjectionFamily,
    /// The capability's slug (capability guidance only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// The exact text it ships with (or would ship with, when removed or excluded).
    pub text: String,
    /// Default, custom, removed (switched off), or excluded for another reason.
    pub state: PreviewState,
    /// Why it is excluded (or which key removed it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The override state.
    #[serde(rename = "override")]
    pub override_state: OverrideState,
    /// Whether the block carries a compliance rule.
    pub compliance: bool,
    /// Tools the capability contributes (registered whatever the block's state).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// Who controls the text.
    pub trust: Trust,
    /// Its stability in this assembly.
    pub stability: Stability,
}

/// The state of an injectable block, as the inspector draws it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PreviewState {
    /// Ships with its default text.
    Default,
    /// Ships with custom text.
    Custom,
    /// Switched off by an override.
    Removed,
    /// Not shipped for another reason (hidden in this prompt, tenant instructions off…).
    Excluded,
}

/// One built injection: its preview, how it maps to a block, and the findings it raised.
#[derive(Debug, Clone)]
pub(crate) struct Injection {
    pub preview: InjectionPreview,
    pub exclusion: Option<Exclusion>,
    pub kind: BlockKind,
    pub origin: crate::block::Origin,
    /// Findings of this send (tenant instructions that could not be read).
    pub diagnostics: Vec<Diagnostic>,
}

impl Injection {
    #[allow(clippy::too_many_arguments)]
    fn new(
        id: String,
        family: InjectionFamily,
        slug: Option<String>,
        text: String,
        decision: &Decision,
        exclusion: Option<Exclusion>,
        trust: Trust,
        stability: Stability,
        origin: crate::block::Origin,
    ) -> Self {
        let state = match (&exclusion, decision.state) {
            (Some(Exclusion::Override { .. }), _) => PreviewState::Removed,
            (Some(_), _) => PreviewState::Excluded,
            (None, OverrideState::Custom) => PreviewState::Custom,
            (None, _) => PreviewState::Default,
        };
        Self {
            preview: InjectionPreview {
                id,
                family,
                slug,
                text,
                state,
                reason: exclusion.as_ref().map(ToString::to_string),
                override_state: decision.state,
                compliance: false,
                tools: Vec::new(),
                trust,
                stability,
            },
            kind: if family == InjectionFamily::Capability {
                BlockKind::Guidance
            } else {
                BlockKind::Injection
            },
            exclusion,
            origin,
            diagnostics: Vec::new(),
        }
    }
}

/// The overrides that apply to a send: the send's stored copy when present, else the spec's.
pub(crate) fn overrides_for<'a>(spec: Option<&'a Value>, ctx: &'a SendContext) -> Overrides<'a> {
    Overrides::read(ctx.auto_injections.as_ref().or(spec))
}

/// Capability guidance, then tenant instructions (with their closer), for one prompt.
pub(crate) fn stage_injections(
    stage: &CompiledStage,
    ctx: &SendContext,
    prompt: Prompt<'_>,
    overrides: &Overrides<'_>,
    stability: Stability,
) -> Vec<Injection> {
    let mut out = Vec::new();
    for capability in &stage.capabilities {
        let (decision, text) = capability_decision(capability, overrides);
        let exclusion = if let Some(key) = decision.off_key.clone().filter(|_| !decision.ships()) {
            Some(Exclusion::Override { key })
        } else if !decision.visible_in(prompt) {
            Some(Exclusion::Scope {
                prompt: prompt.to_string(),
            })
        } else {
            None
        };
        let trust = if decision.state == OverrideState::Custom {
            Trust::Author
        } else {
            Trust::Platform
        };
        let origin = crate::block::Origin::Capability {
            slug: capability.slug.clone(),
            registry: capability.registry,
        };
        let mut injection = Injection::new(
            format!("{CAPABILITY_PREFIX}{}", capability.slug),
            InjectionFamily::Capability,
            Some(capability.slug.clone()),
            text,
            &decision,
            exclusion,
            trust,
            stability,
            origin,
        );
        injection.preview.compliance = capability.compliance;
        injection.preview.tools = capability.tools.clone();
        out.push(injection);
    }
    let decision = overrides.decide(Injectable::TenantInstructions);
    let tenant = ctx.tenant_instructions.as_ref();
    let body = tenant.map(|t| t.text.trim()).unwrap_or_default();
    let text = if body.is_empty() {
        String::new()
    } else {
        format!("{TENANT_HEADER}\n\n{body}")
    };
    let mut diagnostics = Vec::new();
    let exclusion = if let Some(key) = decision.off_key.clone().filter(|_| !decision.ships()) {
        Some(Exclusion::Override { key })
    } else {
        match tenant {
            None => Some(Exclusion::Disabled {
                reason: "no tenant instructions were supplied".into(),
            }),
            Some(t) if t.unavailable.is_some() => {
                let why = t.unavailable.clone().unwrap_or_default();
                diagnostics.push(
                    Diagnostic::warning(
                        "tenant-instructions-unavailable",
                        format!("tenant instructions could not be read ({why}); the prompt goes out without them"),
                    )
                    .subject(TENANT_INSTRUCTIONS),
                );
                Some(Exclusion::Disabled {
                    reason: format!("unavailable: {why}"),
                })
            }
            Some(t) if !t.enabled => Some(Exclusion::Disabled {
                reason: "switched off in the tenant's settings".into(),
            }),
            Some(_) if body.is_empty() => Some(Exclusion::Disabled {
                reason: "the tenant has no instructions".into(),
            }),
            Some(_) => None,
        }
    };
    let included = exclusion.is_none();
    let mut injection = Injection::new(
        TENANT_INSTRUCTIONS.into(),
        InjectionFamily::TenantInstructions,
        None,
        text,
        &decision,
        exclusion,
        Trust::Tenant,
        stability,
        crate::block::Origin::Tenant,
    );
    injection.diagnostics.extend(diagnostics);
    out.push(injection);
    if included {
        out.push(Injection::new(
            TENANT_INSTRUCTIONS_END.into(),
            InjectionFamily::TenantInstructions,
            None,
            TENANT_CLOSER.into(),
            &Decision::default_shipping(),
            None,
            Trust::Platform,
            stability,
            crate::block::Origin::Platform {
                builder: TENANT_INSTRUCTIONS_END,
            },
        ));
    }
    out
}

/// Every finding of the override decisions for a stage, once: the configuration's shape, each
/// block's entry, and entries for capabilities the stage does not enable (harmless leftovers,
/// reported as information).
pub(crate) fn override_findings(
    stage: &CompiledStage,
    overrides: &Overrides<'_>,
) -> Vec<Diagnostic> {
    let mut out = overrides.diagnostics().to_vec();
    out.extend(overrides.decide(Injectable::PlatformContext).diagnostics);
    out.extend(overrides.decide(Injectable::TenantInstructions).diagnostics);
    for capability in &stage.capabilities {
        out.extend(capability_decision(capability, overrides).0.diagnostics);
    }
    for slug in overrides.configured_capabilities() {
        if !stage.capabilities.iter().any(|c| c.slug == slug) {
            out.push(
                Diagnostic::new(
                    crate::diagnostic::Severity::Info,
                    "leftover-override",
                    format!("`auto_injections.capabilities.{slug}` configures a capability this stage does not enable; it has no effect"),
                )
                .subject(format!("auto_injections.capabilities.{slug}")),
            );
        }
    }
    out
}

/// One capability's decision and its decided text (the same for every prompt of the stage).
fn capability_decision(
    capability: &CompiledCapability,
    overrides: &Overrides<'_>,
) -> (Decision, String) {
    let mut decision = overrides.decide(Injectable::Capability {
        slug: &capability.slug,
        compliance: capability.compliance,
    });
    // The default text was substituted successfully at compile time, so this cannot fail.
    let text = manifests::decided_text(
        &capability.slug,
        capability.default_source(),
        &capability.config,
        &mut decision,
    )
    .unwrap_or_default();
    (decision, text)
}

/// The segments sidecar of a stage: each capability's exact text with its shipping and
/// visibility, keyed by block id, in stage order.
pub(crate) fn capability_segments(
    stage: &CompiledStage,
    overrides: &Overrides<'_>,
) -> Vec<(String, manifests::CapabilitySegment)> {
    stage
        .capabilities
        .iter()
        .map(|capability| {
            let (decision, text) = capability_decision(capability, overrides);
            let segment = manifests::CapabilitySegment {
                text,
                override_state: decision.state,
                ships: decision.ships(),
                main: decision.main,
                subagents: decision.subagents,
            };
            (format!("{CAPABILITY_PREFIX}{}", capability.slug), segment)
        })
        .collect()
}

/// The platform context preamble: the current date and time in UTC, labelled.
pub(crate) fn platform_injection(ctx: &SendContext, overrides: &Overrides<'_>) -> Injection {
    let decision = overrides.decide(Injectable::PlatformContext);
    let utc = ctx.now.utc();
    let text = format!(
        "Current date and time: {} UTC ({}). This is UTC, not necessarily the caller's local time.",
        utc.strftime("%Y-%m-%d %H:%M"),
        utc.strftime("%A"),
    );
    let exclusion = decision
        .off_key
        .clone()
        .filter(|_| !decision.ships())
        .map(|key| Exclusion::Override { key });
    Injection::new(
        PLATFORM_CONTEXT.into(),
        InjectionFamily::PlatformContext,
        None,
        text,
        &decision,
        exclusion,
        Trust::Platform,
        Stability::Volatile,
        crate::block::Origin::Platform {
            builder: PLATFORM_CONTEXT,
        },
    )
}

impl Decision {
    /// The decision for a block no override can reach.
    pub(crate) fn default_shipping() -> Self {
        Overrides::default().decide(Injectable::PlatformContext)
    }
}

pub(crate) use compile::capabilities as compile_capabilities;

/// Every injectable block of the active `prompt` of a send, built by the same functions as the
/// live assembly (see [`Agent::preview_injections`](crate::Agent::preview_injections)).
pub(crate) fn preview_injections(
    stage: &CompiledStage,
    configured: Option<&Value>,
    ctx: &SendContext,
    prompt: Prompt<'_>,
    authored_volatile: bool,
) -> Vec<InjectionPreview> {
    let overrides = overrides_for(configured, ctx);
    let stability = if authored_volatile {
        Stability::Volatile
    } else {
        Stability::Stable
    };
    let mut out: Vec<InjectionPreview> =
        stage_injections(stage, ctx, prompt, &overrides, stability)
            .into_iter()
            .map(|i| i.preview)
            .collect();
    out.push(platform_injection(ctx, &overrides).preview);
    for slug in overrides.configured_capabilities() {
        if stage.capabilities.iter().any(|c| c.slug == slug) {
            continue;
        }
        let decision = overrides.decide(Injectable::Capability {
            slug,
            compliance: false,
        });
        out.push(InjectionPreview {
            id: format!("{CAPABILITY_PREFIX}{slug}"),
            family: InjectionFamily::Capability,
            slug: Some(slug.to_owned()),
            text: String::new(),
            state: PreviewState::Excluded,
            reason: Some(
                "the stage does not enable this capability; the override is left over".into(),
            ),
            override_state: decision.state,
            compliance: false,
            tools: Vec::new(),
            trust: Trust::Platform,
            stability,
        });
    }
    out
}
