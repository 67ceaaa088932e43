//! Registry capabilities from disk: the manifests a stage references, read from the
//! `capabilities/` folder next to its spec.
//!
//! A stage enables a registry capability as `capability:<slug>`; its manifest is
//! `capabilities/<slug>.toml`. A reference without a file is left to the compiler, which reports it
//! with the reference's location. Manifests are read through the bounded reader with the spec's
//! folder as their root: a manifest that is not a regular file, is too large, or is a symlink to a
//! file outside the spec's folder is refused before a byte of it is parsed.

use std::path::{Path, PathBuf};

use promptstack_core::inject::manifests::{Manifest, Published, REFERENCE_PREFIX, Registry};
use promptstack_core::spec::{self, AgentSpec, check_relative_path};
use promptstack_core::{Agent, SendContext, SpecError, SpecFormat};

use crate::limits::{InputError, InputKind, Limits, read_within};

/// Why an agent with registry capabilities could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The spec (or a manifest reference) is invalid.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A manifest could not be read, is not a regular file, is too large or leaves the spec's
    /// folder.
    #[error(transparent)]
    Input(#[from] InputError),
    /// A manifest is not valid.
    #[error(transparent)]
    Manifest(#[from] promptstack_core::Error),
}

/// The folder registry manifests are read from, for a spec at `spec_path`.
pub fn manifest_dir(spec_path: &Path) -> PathBuf {
    spec_folder(spec_path).join("capabilities")
}

/// The folder holding the spec at `spec_path`: the root its manifests may not leave.
fn spec_folder(spec_path: &Path) -> &Path {
    match spec_path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Reads the manifest of every `capability:<slug>` the spec's stage references from
/// `spec_folder/capabilities/`, each bounded by `limits` and confined to `spec_folder`.
///
/// # Errors
///
/// A manifest that exists but cannot be read (not a regular file, too large, a symlink out of
/// `spec_folder`) or parsed. A missing manifest is not an error here.
pub fn manifests_for(
    spec: &AgentSpec,
    spec_folder: &Path,
    limits: &Limits,
) -> Result<Registry, LoadError> {
    let mut registry = Registry::new();
    let Some(stage) = &spec.stage else {
        return Ok(registry);
    };
    let dir = spec_folder.join("capabilities");
    for reference in &stage.capabilities {
        let Some(slug) = reference.strip_prefix(REFERENCE_PREFIX) else {
            continue;
        };
        // A slug with a path separator could read outside the folder; the compiler rejects it as
        // unknown instead.
        if slug.is_empty() || slug.contains(['/', '\\']) || slug.starts_with('.') {
            continue;
        }
        let path = dir.join(format!("{slug}.toml"));
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let bytes = read_within(&path, spec_folder, InputKind::Manifest, limits)?;
        let text = String::from_utf8(bytes).map_err(|_| InputError::Io {
            kind: InputKind::Manifest,
            path: path.clone(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"),
        })?;
        let manifest = Manifest::from_toml(&text, &path.display().to_string())?;
        registry.insert(manifest);
    }
    Ok(registry)
}

/// Parses and compiles a spec held in memory, resolving its registry capabilities from `files`: a
/// map of paths relative to the spec's folder to their contents, in which the manifest of
/// `capability:<slug>` is `capabilities/<slug>.toml` (as [`compile`] reads them from disk). `name`
/// names the spec in diagnostics. A reference without a file is left to the compiler.
///
/// # Errors
///
/// An invalid spec, or a manifest that is too large or invalid.
pub fn compile_in_memory(
    bytes: &[u8],
    name: &str,
    format: SpecFormat,
    files: &std::collections::BTreeMap<String, String>,
    limits: &Limits,
) -> Result<Agent, LoadError> {
    let parsed = spec::parse(bytes, name, format)?;
    let mut registry = Registry::new();
    if let Some(stage) = &parsed.spec.stage {
        for reference in &stage.capabilities {
            let Some(slug) = reference.strip_prefix(REFERENCE_PREFIX) else {
                continue;
            };
            let path = format!("capabilities/{slug}.toml");
            // A slug that does not make a normalised path names no file, as on disk.
            if check_relative_path(&path).is_err() || slug.contains('/') {
                continue;
            }
            let Some(text) = files.get(&path) else {
                continue;
            };
            let limit = limits.get(crate::limits::Limit::ManifestBytes);
            if text.len() as u64 > limit {
                return Err(LoadError::Input(InputError::TooLarge {
                    kind: InputKind::Manifest,
                    path: PathBuf::from(&path),
                    max: limit,
                }));
            }
            registry.insert(Manifest::from_toml(text, &path)?);
        }
    }
    let agent = Agent::compile_with_registry(parsed, &registry)?;
    Ok(agent.with_template_memory(limits.get(crate::limits::Limit::TemplateMemory)))
}

/// Publishes the stage of the agent compiled from the spec at `spec_path` for `send`: the
/// authored text of `target`'s main prompt with every registry capability's fragment appended,
/// the segments sidecar and the provenance (see [`Agent::publish_stage`]). The manifests are read
/// from `capabilities/` next to the spec, as [`compile`] reads them.
///
/// # Errors
///
/// An unreadable or invalid manifest; a spec without a stage, an unknown target, or a fragment
/// that cannot be rendered ([`LoadError::Manifest`]).
pub fn publish(
    agent: &Agent,
    spec_path: &Path,
    send: &SendContext,
    target: &str,
    limits: &Limits,
) -> Result<Published, LoadError> {
    let registry = manifests_for(agent.spec(), spec_folder(spec_path), limits)?;
    Ok(agent.publish_stage(send, target, &registry)?)
}

/// Parses and compiles a spec, resolving its registry capabilities from `capabilities/` next to
/// `spec_path` (see [`manifests_for`]), with the template memory of `limits`.
///
/// # Errors
///
/// An invalid spec, or an unreadable or invalid manifest.
pub fn compile(
    bytes: &[u8],
    spec_path: &Path,
    format: SpecFormat,
    limits: &Limits,
) -> Result<Agent, LoadError> {
    let name = spec_path.display().to_string();
    let parsed = spec::parse(bytes, &name, format)?;
    let registry = manifests_for(&parsed.spec, spec_folder(spec_path), limits)?;
    let agent = Agent::compile_with_registry(parsed, &registry)?;
    Ok(agent.with_template_memory(limits.get(crate::limits::Limit::TemplateMemory)))
}
