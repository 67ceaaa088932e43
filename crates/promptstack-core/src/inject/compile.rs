//! Compiling a stage's capabilities: resolving slugs, configuration and contributed tools.

use std::collections::HashSet;

use super::builtin;
use super::manifests::{REFERENCE_PREFIX, Registry};
use super::substitute::substitute;
use crate::ir::CompiledCapability;
use crate::spec::AgentSpec;
use crate::spec::load::{Locator, SpecDiagnostic, suggest};
use crate::spec::span::push_pointer;

/// Resolves `stage.capabilities` and registers each capability's tools (and a registry
/// capability's variables) in the spec, whatever the overrides say: an override changes only the
/// guidance text.
pub(crate) fn capabilities(
    spec: &mut AgentSpec,
    registry: &Registry,
    locator: &Locator<'_>,
    errors: &mut Vec<SpecDiagnostic>,
) -> Vec<CompiledCapability> {
    let Some(stage) = spec.stage.clone() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    for (i, reference) in stage.capabilities.iter().enumerate() {
        let pointer = format!("/stage/capabilities/{i}");
        let (slug, registered) = match reference.strip_prefix(REFERENCE_PREFIX) {
            Some(slug) => (slug, true),
            None => (reference.as_str(), false),
        };
        if !seen.insert(slug.to_owned()) {
            errors.push(locator.at(
                "duplicate-id",
                &pointer,
                false,
                format!("capability `{slug}` is enabled twice"),
                None,
            ));
            continue;
        }
        let configured = stage.capability_configs.get(slug);
        let config_pointer = push_pointer("/stage/capability_configs", slug);
        let (registered, config, default_text, fragment, tools, compliance) = if registered {
            let Some(manifest) = registry.get(slug) else {
                errors.push(locator.at(
                    "unknown-capability",
                    &pointer,
                    false,
                    format!("no manifest for registry capability `{slug}`"),
                    Some("put its manifest next to the spec as capabilities/<slug>.toml".into()),
                ));
                continue;
            };
            for (name, variable) in &manifest.variables {
                spec.variables
                    .entry(name.clone())
                    .or_insert_with(|| variable.clone());
            }
            let config = manifest.config(configured);
            (
                true,
                config,
                "",
                Some(manifest.prompt.fragment.trim().to_owned()),
                manifest.tools.clone(),
                manifest.compliance,
            )
        } else {
            let Some(found) = builtin::builtin(slug) else {
                let known: Vec<String> = builtin::BUILTINS
                    .iter()
                    .map(|b| b.slug.to_owned())
                    .collect();
                let hint = match suggest(slug, &known) {
                    Some(best) => format!("did you mean `{best}`?"),
                    None => format!(
                        "built-in capabilities: {}; registry capabilities are written `capability:<slug>`",
                        known.join(", ")
                    ),
                };
                errors.push(locator.at(
                    "unknown-capability",
                    &pointer,
                    false,
                    format!("unknown capability `{slug}`"),
                    Some(hint),
                ));
                continue;
            };
            let config = found.config(configured);
            if found.slug == "external_consult"
                && !matches!(
                    config.get("role").and_then(|r| r.as_str()),
                    Some("origin" | "transfer")
                )
            {
                errors.push(locator.at(
                    "bad-value",
                    &push_pointer(&config_pointer, "role"),
                    false,
                    "`role` of external_consult must be \"origin\" or \"transfer\"".into(),
                    None,
                ));
                continue;
            }
            let tools = found.tools(&config);
            let text = found.text(&config);
            (false, config, text, None, tools, found.compliance)
        };
        let source_text = fragment.as_deref().unwrap_or(default_text);
        if let Err(missing) = substitute(source_text, &config) {
            errors.push(locator.at(
                "bad-value",
                if configured.is_some() {
                    &config_pointer
                } else {
                    &pointer
                },
                false,
                format!("the guidance of capability `{slug}` reads {missing}"),
                Some(format!("set it under [stage.capability_configs.{slug}]")),
            ));
            continue;
        }
        let mut names = Vec::new();
        for tool in tools {
            if spec.tools.iter().any(|t| t.name == tool.name) {
                errors.push(locator.at(
                    "duplicate-tool",
                    &pointer,
                    false,
                    format!(
                        "capability `{slug}` registers tool `{}`, which is already declared",
                        tool.name
                    ),
                    Some("remove the spec's own declaration; the capability owns the tool".into()),
                ));
                continue;
            }
            names.push(tool.name.clone());
            spec.tools.push(tool);
        }
        out.push(CompiledCapability {
            slug: slug.to_owned(),
            registry: registered,
            compliance,
            config,
            default_text,
            fragment,
            tools: names,
        });
    }
    out
}
