//! Registry capabilities from disk: the manifests a stage references, read from the
//! `capabilities/` folder next to its spec.
//!
//! A stage enables a registry capability as `capability:<slug>`; its manifest is
//! `capabilities/<slug>.toml`. A reference without a file is left to the compiler, which reports it
//! with the reference's location.

use std::path::{Path, PathBuf};

use promptstack_core::inject::registry::{Manifest, REFERENCE_PREFIX, Registry};
use promptstack_core::spec::load;
use promptstack_core::{Agent, AgentSpec, SpecError, SpecFormat};

/// Why an agent with registry capabilities could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The spec (or a manifest reference) is invalid.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// A manifest could not be read.
    #[error("cannot read capability manifest {path}: {source}")]
    Io {
        /// The manifest's path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A manifest is not valid.
    #[error(transparent)]
    Manifest(#[from] promptstack_core::Error),
}

/// The folder registry manifests are read from, for a spec at `spec_path`.
pub fn manifest_dir(spec_path: &Path) -> PathBuf {
    spec_path
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join("capabilities")
}

/// Reads the manifest of every `capability:<slug>` the spec's stage references from `dir`.
///
/// # Errors
///
/// A manifest that exists but cannot be read or parsed. A missing manifest is not an error here.
pub fn manifests_for(spec: &AgentSpec, dir: &Path) -> Result<Registry, LoadError> {
    let mut registry = Registry::new();
    let Some(stage) = &spec.stage else {
        return Ok(registry);
    };
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
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(LoadError::Io { path, source }),
        };
        let manifest = Manifest::from_toml(&text, &path.display().to_string())?;
        registry.insert(manifest);
    }
    Ok(registry)
}

/// Parses and compiles a spec, resolving its registry capabilities from `capabilities/` next to
/// `spec_path`.
///
/// # Errors
///
/// An invalid spec, or an unreadable or invalid manifest.
pub fn compile(bytes: &[u8], spec_path: &Path, format: SpecFormat) -> Result<Agent, LoadError> {
    let name = spec_path.display().to_string();
    let parsed = load::parse(bytes, &name, format)?;
    let registry = manifests_for(&parsed.spec, &manifest_dir(spec_path))?;
    Ok(Agent::compile_with_registry(parsed, &registry)?)
}
