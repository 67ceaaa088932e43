//! Registry capabilities: a manifest per capability (its own small TOML file) with a prompt
//! fragment, the tools it contributes and the variables it declares; and the publish step that
//! expands a stage's `capability:<slug>` references into an executable snapshot.
//!
//! Publishing appends each fragment (substituted from the stage's configuration) to the authored
//! main prompt, records the exact rendered fragment of each slug in a segments sidecar, and
//! records provenance: which byte ranges of the published text were appended, so an editor can
//! strip exactly those back out and show the authored view. Overrides apply as for built-ins:
//! `off` skips only the fragment (tools and variables still expand) and warns; `custom` replaces
//! it (still substituted); a malformed override falls back to the default fragment.

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::overrides::{Decision, Injectable, Overrides};
use super::substitute::{MissingKey, substitute};
use super::{PLATFORM_CONTEXT, TENANT_INSTRUCTIONS, TENANT_INSTRUCTIONS_END};
use crate::block::OverrideState;
use crate::context::SendContext;
use crate::diagnostic::Diagnostic;
use crate::error::{Error, ErrorKind};
use crate::spec::{AgentSpec, ToolSpec, VariableSpec};

/// A registry capability's manifest.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The slug stages reference it by, as `capability:<slug>`.
    pub slug: String,
    /// What the capability does, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the fragment carries a compliance rule (any non-default state warns).
    #[serde(default)]
    pub compliance: bool,
    /// The configuration keys the fragment reads, with their defaults.
    #[serde(default)]
    pub config: BTreeMap<String, ConfigKey>,
    /// The prompt text.
    pub prompt: ManifestPrompt,
    /// The tools the capability contributes.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The variables the capability declares.
    #[serde(default)]
    pub variables: BTreeMap<String, VariableSpec>,
}

/// One configuration key of a manifest.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfigKey {
    /// The value used when the stage does not configure one. Without it the key is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// What the key means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A manifest's prompt text.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ManifestPrompt {
    /// The fragment appended to the stage's prompt, with `{{capability_config.<key>}}` placeholders.
    pub fragment: String,
}

impl Manifest {
    /// Parses a manifest from TOML.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Manifest`] with the parser's located message.
    pub fn from_toml(text: &str, name: &str) -> Result<Self, Error> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| {
            Error::new(
                ErrorKind::Manifest,
                format!("capability manifest {name}: {}", e.to_string().trim_end()),
            )
        })?;
        if manifest.prompt.fragment.trim().is_empty() {
            return Err(Error::new(
                ErrorKind::Manifest,
                format!("capability manifest {name}: `prompt.fragment` is empty"),
            ));
        }
        Ok(manifest)
    }

    /// The stage's configuration over the manifest's defaults.
    pub fn config(&self, configured: Option<&Map<String, Value>>) -> Map<String, Value> {
        let mut config: Map<String, Value> = self
            .config
            .iter()
            .filter_map(|(k, c)| Some((k.clone(), c.default.clone()?)))
            .collect();
        if let Some(configured) = configured {
            for (k, v) in configured {
                config.insert(k.clone(), v.clone());
            }
        }
        config
    }

    /// The default fragment, substituted.
    ///
    /// # Errors
    ///
    /// A placeholder without a configured value or default.
    pub fn fragment(&self, config: &Map<String, Value>) -> Result<String, MissingKey> {
        substitute(self.prompt.fragment.trim(), config)
    }
}

/// The manifests available to a stage, by slug.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    manifests: BTreeMap<String, Arc<Manifest>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a manifest (replacing one with the same slug).
    pub fn insert(&mut self, manifest: Manifest) {
        self.manifests
            .insert(manifest.slug.clone(), Arc::new(manifest));
    }

    /// The manifest with this slug.
    pub fn get(&self, slug: &str) -> Option<&Arc<Manifest>> {
        self.manifests.get(slug)
    }
}

/// The prefix of a registry reference in `stage.capabilities`.
pub const REFERENCE_PREFIX: &str = "capability:";

/// One slug's rendered fragment, as recorded at publish.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilitySegment {
    /// The exact text appended (or that would be appended) for this slug.
    pub text: String,
    /// The override state the text reflects.
    #[serde(rename = "override")]
    pub override_state: OverrideState,
    /// Whether the fragment ships at all (`off` skips it).
    pub ships: bool,
    /// Visible in the main prompt.
    pub main: bool,
    /// Visibility per subagent topic (absent: visible).
    pub subagents: BTreeMap<String, bool>,
}

impl CapabilitySegment {
    /// Whether the segment belongs in this prompt.
    pub fn visible_in(&self, prompt: super::Prompt<'_>) -> bool {
        self.ships
            && match prompt {
                super::Prompt::Main => self.main,
                super::Prompt::Subagent(topic) => {
                    self.subagents.get(topic).copied().unwrap_or(true)
                }
            }
    }
}

/// Which bytes of a published text a slug appended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FragmentRange {
    /// The capability's slug.
    pub slug: String,
    /// The byte range of the appended text, separator included.
    pub range: std::ops::Range<usize>,
}

/// The result of publishing a stage's main prompt.
#[derive(Debug, Clone, Serialize)]
pub struct Published {
    /// The executable snapshot: the authored text followed by every fragment visible in the main
    /// prompt.
    pub text: String,
    /// The exact rendered fragment of each slug (the segments sidecar), shipped or not.
    pub segments: BTreeMap<String, CapabilitySegment>,
    /// The appended ranges of `text`, in order.
    pub provenance: Vec<FragmentRange>,
    /// Tools contributed by the capabilities, in reference order.
    pub tools: Vec<ToolSpec>,
    /// Variables declared by the capabilities.
    pub variables: BTreeMap<String, VariableSpec>,
    /// Warnings: skipped fragments, malformed overrides, compliance.
    pub diagnostics: Vec<Diagnostic>,
}

impl Published {
    /// The authored view: the published text with exactly the appended fragments removed. An
    /// appended range whose text no longer matches its segment (the text was edited after
    /// publishing) is left in place.
    pub fn authored_view(&self) -> String {
        let mut text = self.text.clone();
        for provenance in self.provenance.iter().rev() {
            let Some(segment) = self.segments.get(&provenance.slug) else {
                continue;
            };
            let Some(appended) = text.get(provenance.range.clone()) else {
                continue;
            };
            let exact = appended == segment.text
                || appended.strip_prefix(SEPARATOR) == Some(segment.text.as_str());
            if provenance.range.end == text.len() && exact {
                text.truncate(provenance.range.start);
            }
        }
        text
    }
}

/// The separator between the authored text and each appended fragment.
pub const SEPARATOR: &str = "\n\n";

/// The text one capability's override decision gives a fragment: the default, the custom text
/// (substituted too), or the default after a malformed override. The same function serves the
/// publish step, the live assembly and the preview.
///
/// # Errors
///
/// A placeholder without a value in the default fragment. A custom text with such a placeholder
/// falls back to the default with a diagnostic instead.
pub fn decided_text(
    slug: &str,
    default: &str,
    config: &Map<String, Value>,
    decision: &mut Decision,
) -> Result<String, MissingKey> {
    let default_text = substitute(default.trim(), config)?;
    if let Some(custom) = &decision.custom_text {
        match substitute(custom.trim(), config) {
            Ok(text) => return Ok(text),
            Err(missing) => {
                decision.state = OverrideState::FallbackAfterMalformed;
                decision.diagnostics.push(
                    Diagnostic::warning(
                        "malformed-override",
                        format!("the custom text of `{slug}` reads {missing}; the default applies"),
                    )
                    .subject(format!("auto_injections.capabilities.{slug}.text")),
                );
            }
        }
    }
    Ok(default_text)
}

/// Publishes the stage of `spec` for `ctx`: the authored text of the main prompt that `authored`
/// returns, expanded by [`publish`] with the stage's references and capability configuration,
/// the registry's manifests, and the send's overrides (else the spec's).
pub(crate) fn publish_stage(
    spec: &AgentSpec,
    ctx: &SendContext,
    registry: &Registry,
    authored: impl FnOnce() -> Result<String, Error>,
) -> Result<Published, Error> {
    let Some(stage) = &spec.stage else {
        return Err(Error::new(
            ErrorKind::NotFound,
            "publishing needs a spec with a [stage]",
        ));
    };
    let authored = authored()?;
    let overrides = ctx
        .auto_injections
        .as_ref()
        .or(spec.auto_injections.as_ref());
    publish(
        &authored,
        &stage.capabilities,
        registry,
        &stage.capability_configs,
        overrides,
    )
}

/// Whether a block id is one of the tail's (ambient) blocks.
pub(crate) fn is_ambient(id: &str) -> bool {
    matches!(
        id,
        TENANT_INSTRUCTIONS | TENANT_INSTRUCTIONS_END | PLATFORM_CONTEXT
    )
}

/// Publishes a stage's main prompt: expands every `capability:<slug>` reference of `references`
/// (other entries are built-ins and are skipped) against the registry.
///
/// # Errors
///
/// [`ErrorKind::NotFound`] for a reference without a manifest; [`ErrorKind::Render`] for a
/// fragment placeholder without a value. Publishing never silently produces a different text.
pub fn publish(
    authored: &str,
    references: &[String],
    registry: &Registry,
    configs: &BTreeMap<String, Map<String, Value>>,
    overrides: Option<&Value>,
) -> Result<Published, Error> {
    let overrides = Overrides::read(overrides);
    let mut published = Published {
        text: authored.to_owned(),
        segments: BTreeMap::new(),
        provenance: Vec::new(),
        tools: Vec::new(),
        variables: BTreeMap::new(),
        diagnostics: overrides.diagnostics().to_vec(),
    };
    for reference in references {
        let Some(slug) = reference.strip_prefix(REFERENCE_PREFIX) else {
            continue;
        };
        let manifest = registry.get(slug).ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                format!("no manifest for registry capability `{slug}`"),
            )
        })?;
        let config = manifest.config(configs.get(slug));
        let mut decision = overrides.decide(Injectable::Capability {
            slug,
            compliance: manifest.compliance,
        });
        let text = decided_text(slug, &manifest.prompt.fragment, &config, &mut decision).map_err(
            |missing| {
                Error::new(
                    ErrorKind::Render,
                    format!("the fragment of registry capability `{slug}` reads {missing}"),
                )
            },
        )?;
        published.tools.extend(manifest.tools.iter().cloned());
        for (name, variable) in &manifest.variables {
            published.variables.insert(name.clone(), variable.clone());
        }
        if !decision.ships() {
            published.diagnostics.push(
                Diagnostic::warning(
                    "fragment-suppressed",
                    format!(
                        "the prompt fragment of `{slug}` is switched off; its tools and variables are still published"
                    ),
                )
                .subject(format!("auto_injections.capabilities.{slug}")),
            );
        }
        let segment = CapabilitySegment {
            text,
            override_state: decision.state,
            ships: decision.ships(),
            main: decision.main,
            subagents: decision.subagents.clone(),
        };
        if segment.visible_in(super::Prompt::Main) {
            let start = published.text.len();
            if !published.text.is_empty() {
                published.text.push_str(SEPARATOR);
            }
            published.text.push_str(&segment.text);
            published.provenance.push(FragmentRange {
                slug: slug.to_owned(),
                range: start..published.text.len(),
            });
        }
        published.diagnostics.extend(decision.diagnostics);
        published.segments.insert(slug.to_owned(), segment);
    }
    Ok(published)
}
