//! Bundles from folders (`agent.toml`, `capabilities/*.toml`, `evals/*.toml`, `variants/*.toml`,
//! `sends/*.json`), and publishing them as the operator: what `promptstack serve --examples` does.

use std::collections::BTreeMap;
use std::path::Path;

use promptstack::limits::{InputKind, Limits};
use promptstack_store::{AgentName, Expected, LabelName, Tenant, VersionId};

use crate::bundle::{Bundle, BundleFormat};
use crate::problem::Problem;
use crate::render::ProviderFormat;
use crate::state::AppState;

/// Why a folder could not be read as a bundle.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FolderError {
    /// A file could not be read, or was refused by the limits.
    #[error(transparent)]
    Input(#[from] promptstack::limits::InputError),
    /// A folder could not be listed.
    #[error("{path}: {source}")]
    List {
        /// The folder.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not UTF-8 or a send is not JSON.
    #[error("{0}")]
    Invalid(String),
}

fn text(path: &Path, kind: InputKind, limits: &Limits) -> Result<String, FolderError> {
    let bytes = promptstack::limits::read(path, kind, limits)?;
    String::from_utf8(bytes)
        .map_err(|_| FolderError::Invalid(format!("{} is not UTF-8", path.display())))
}

fn entries(dir: &Path, extension: &str) -> Result<Vec<std::path::PathBuf>, FolderError> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(FolderError::List {
                path: dir.display().to_string(),
                source,
            });
        }
    };
    let mut paths: Vec<_> = listing
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == extension) && p.is_file())
        .collect();
    paths.sort();
    Ok(paths)
}

impl Bundle {
    /// Reads the bundle of the agent in `dir`: `agent.toml`, every `capabilities/*.toml`, every
    /// `evals/*.toml`, every `variants/*.toml` (the specs a suite's versions name beside
    /// `agent.toml`) and every `sends/*.json` (named by file stem), each through the bounded
    /// reader.
    ///
    /// # Errors
    ///
    /// A file that cannot be read, is too large, is not UTF-8, or a send that is not JSON.
    pub fn from_dir(dir: &Path, limits: &Limits) -> Result<Bundle, FolderError> {
        let spec = text(&dir.join("agent.toml"), InputKind::Spec, limits)?;
        let mut files = BTreeMap::new();
        for path in entries(&dir.join("capabilities"), "toml")? {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            files.insert(
                format!("capabilities/{name}"),
                text(&path, InputKind::Manifest, limits)?,
            );
        }
        for path in entries(&dir.join("evals"), "toml")? {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            files.insert(
                format!("evals/{name}"),
                text(&path, InputKind::Manifest, limits)?,
            );
        }
        for path in entries(&dir.join("variants"), "toml")? {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            files.insert(
                format!("variants/{name}"),
                text(&path, InputKind::Spec, limits)?,
            );
        }
        let mut sends = BTreeMap::new();
        for path in entries(&dir.join("sends"), "json")? {
            let name = path
                .file_stem()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            let body = text(&path, InputKind::Send, limits)?;
            let value = serde_json::from_str(&body)
                .map_err(|e| FolderError::Invalid(format!("{}: {e}", path.display())))?;
            sends.insert(name, value);
        }
        Ok(Bundle {
            spec,
            format: BundleFormat::Toml,
            files,
            sends,
        })
    }
}

/// Publishes `bundle` as a version of `agent` in `tenant` as the operator (compiled and linted
/// as over HTTP) and points `production` at it when `production` is not set yet: a label moved
/// by a deploy is never moved back. Returns the version id and whether `production` was set.
///
/// # Errors
///
/// The bundle does not compile or has lint errors (422), or the store failed.
pub async fn publish_to_production(
    state: &AppState,
    tenant: &Tenant,
    agent: &AgentName,
    bundle: &Bundle,
) -> Result<(VersionId, bool), Problem> {
    state.inner.store.create_tenant(tenant).await?;
    let production = LabelName::parse(crate::engine::PROTECTED_LABEL)?;
    let published = crate::api::publish_bundle(
        state,
        tenant,
        agent,
        bundle,
        None,
        &production,
        ProviderFormat::Anthropic,
    )
    .await?;
    let id = VersionId::parse(&published.version.id)?;
    let moved = match state
        .inner
        .store
        .move_label(tenant, agent, &production, &id, &Expected::Absent, None)
        .await
    {
        Ok(_) => true,
        Err(error) if error.kind() == promptstack_store::ErrorKind::Conflict => false,
        Err(error) => return Err(error.into()),
    };
    state
        .inner
        .labels
        .expire(&(tenant.clone(), agent.clone(), production));
    Ok((id, moved))
}
