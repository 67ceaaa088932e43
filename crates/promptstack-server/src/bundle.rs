//! The published unit: a spec with the manifests and files it reads, and optional example sends.
//!
//! A bundle travels as JSON:
//!
//! ```json
//! {"spec": "<agent.toml text>", "format": "toml",
//!  "files": {"capabilities/payments.toml": "<manifest text>"},
//!  "sends": {"research": {"model": {...}, ...}}}
//! ```
//!
//! Its canonical form is the same document with every object's keys sorted, no insignificant
//! whitespace and the default `format` written out; the version id is the SHA-256 of those bytes,
//! so publishing the same bundle twice yields the same version.

use std::collections::BTreeMap;

use promptstack::limits::Limits;
use promptstack::{Agent, SpecFormat};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use utoipa::ToSchema;

use crate::problem::Problem;

/// The media type bundles are stored under.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.promptstack.bundle+json";

/// How many files and example sends a bundle may hold.
pub const MAX_ENTRIES: usize = crate::contract::MAX_BUNDLE_ENTRIES;

/// The most bytes one file of a bundle may hold.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;

/// The most bytes the spec and the files of a bundle may hold together.
pub const MAX_FILES_BYTES: u64 = 4 * 1024 * 1024;

/// The most located problems one refused bundle reports.
const MAX_REPORTED: usize = 100;

/// The name the spec goes by in diagnostics.
pub const SPEC_NAME: &str = "agent.toml";

/// An agent bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    /// The agent spec's text.
    pub spec: String,
    /// The spec's syntax: `toml` (default) or `json`.
    #[serde(default)]
    pub format: BundleFormat,
    /// Files the spec reads, by path relative to the spec's folder: the registry capability
    /// manifests as `capabilities/<slug>.toml`. At most 256 files, each at most 1 MiB, the spec
    /// and the files together at most 4 MiB (in UTF-8 bytes).
    #[serde(default)]
    #[schema(value_type = crate::contract::BundleFilesSchema)]
    pub files: BTreeMap<String, String>,
    /// Example send contexts by name (at most 256); publishing reports the cache impact on each.
    #[serde(default)]
    #[schema(value_type = crate::contract::BundleSendsSchema)]
    pub sends: BTreeMap<String, serde_json::Value>,
}

/// The spec's syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BundleFormat {
    /// TOML.
    #[default]
    Toml,
    /// JSON.
    Json,
}

impl Bundle {
    /// The canonical bytes: keys sorted (every map here is ordered, and `serde_json::Value`
    /// objects are sorted maps), compact.
    pub fn canonical(&self) -> Vec<u8> {
        // Sorted explicitly: another crate in the build may turn on serde_json's
        // `preserve_order`, under which objects keep their insertion order.
        let value = serde_json::to_value(self).unwrap_or_default();
        serde_json::to_vec(&sorted(value)).unwrap_or_default()
    }

    /// The version id: lowercase hex SHA-256 of the canonical bytes.
    pub fn id(&self) -> String {
        let digest = Sha256::digest(self.canonical());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Reads a stored bundle.
    pub fn from_stored(bytes: &[u8]) -> Result<Bundle, Problem> {
        serde_json::from_slice(bytes).map_err(|e| {
            Problem::new(
                axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                "unreadable-bundle",
                format!("a stored bundle cannot be read: {e}"),
            )
        })
    }

    /// Checks what a bundle may hold before anything of it is compiled: at most
    /// [`MAX_ENTRIES`] files and sends; every file named by a normalised relative path (see
    /// [`promptstack::spec::check_relative_path`]) and at most [`MAX_FILE_BYTES`] long; the
    /// spec and the files together at most `max_bytes`. Every problem is reported at once, as a
    /// 422 whose diagnostics name the file (`files/<path>`).
    pub fn check_shape(&self) -> Result<(), Problem> {
        use promptstack::diagnostic::{Diagnostic, quote};
        let mut found = Vec::new();
        if self.files.len() > MAX_ENTRIES {
            found.push(
                Diagnostic::error(
                    "too-many-files",
                    format!(
                        "the bundle holds {} files; at most {MAX_ENTRIES} are accepted",
                        self.files.len()
                    ),
                )
                .subject("files"),
            );
        }
        if self.sends.len() > MAX_ENTRIES {
            found.push(
                Diagnostic::error(
                    "too-many-sends",
                    format!(
                        "the bundle holds {} sends; at most {MAX_ENTRIES} are accepted",
                        self.sends.len()
                    ),
                )
                .subject("sends"),
            );
        }
        let mut total = self.spec.len() as u64;
        for (path, text) in &self.files {
            total = total.saturating_add(text.len() as u64);
            let subject = format!("files/{}", quote(path));
            if let Err(why) = promptstack::spec::check_relative_path(path) {
                found.push(
                    Diagnostic::error("invalid-file-path", format!("`{}`: {why}", quote(path)))
                        .subject(subject.clone()),
                );
            }
            if text.len() > MAX_FILE_BYTES {
                found.push(
                    Diagnostic::error(
                        "file-too-large",
                        format!(
                            "`{}` holds {} bytes; a file holds at most {MAX_FILE_BYTES}",
                            quote(path),
                            text.len()
                        ),
                    )
                    .subject(subject),
                );
            }
        }
        if total > MAX_FILES_BYTES {
            found.push(
                Diagnostic::error(
                    "bundle-too-large",
                    format!(
                        "the spec and its files hold {total} bytes together; a bundle holds at \
                         most {MAX_FILES_BYTES}"
                    ),
                )
                .subject("files"),
            );
        }
        if found.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = found
            .iter()
            .filter_map(|d| d.subject.clone())
            .take(10)
            .collect();
        let detail = format!(
            "the bundle is refused ({} problem(s)): {}{}",
            found.len(),
            names.join(", "),
            if found.len() > names.len() {
                ", …"
            } else {
                ""
            }
        );
        let diagnostics = found
            .iter()
            .take(MAX_REPORTED)
            .filter_map(|d| serde_json::to_value(d).ok())
            .collect();
        Err(Problem::unprocessable("invalid-bundle", detail).with_diagnostics(diagnostics))
    }

    /// The bundle's eval suites (`evals/*.toml`, `evals/*.json`) by path.
    pub fn suites(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files.iter().filter_map(|(path, text)| {
            let name = path.strip_prefix("evals/")?;
            let suite = !name.contains('/')
                && (name.ends_with(".toml") || name.ends_with(".json"))
                && name.len() > 5;
            suite.then_some((path.as_str(), text.as_str()))
        })
    }

    /// Checks every eval suite as `promptstack eval` reads one, and that each file a suite names
    /// is in the bundle: the spec (`agent.toml`), a file, or an example send as
    /// `sends/<name>.json`. Every problem of every suite is reported at once, located in its
    /// file, as one 422 `invalid-suite`.
    pub fn check_suites(&self) -> Result<(), Problem> {
        let exists = |path: &str| {
            path == SPEC_NAME
                || self.files.contains_key(path)
                || path
                    .strip_prefix("sends/")
                    .and_then(|name| name.strip_suffix(".json"))
                    .is_some_and(|name| self.sends.contains_key(name))
        };
        let mut diagnostics = Vec::new();
        let mut refused = 0usize;
        let mut gate: Option<&str> = None;
        for (path, text) in self.suites() {
            match promptstack_eval::suite::Suite::parse_for(text.as_bytes(), path, exists) {
                Ok(suite) if suite.gate.is_some() => match gate {
                    None => gate = Some(path),
                    Some(first) => {
                        refused += 1;
                        let diagnostic = promptstack::diagnostic::Diagnostic::error(
                            "second-gate",
                            format!(
                                "`{path}` declares `[gate]`, and so does `{first}`: an agent has \
                                 one gate suite"
                            ),
                        )
                        .subject(format!("files/{path}"));
                        diagnostics.extend(serde_json::to_value(diagnostic).ok());
                    }
                },
                Ok(_) => {}
                Err(error) => {
                    refused += 1;
                    diagnostics.extend(
                        error
                            .diagnostics
                            .iter()
                            .filter_map(|d| serde_json::to_value(d).ok()),
                    );
                }
            }
        }
        if refused == 0 {
            return Ok(());
        }
        let detail = format!(
            "{} problem(s) in {refused} eval suite(s); nothing was published",
            diagnostics.len()
        );
        diagnostics.truncate(MAX_REPORTED);
        Err(Problem::unprocessable("invalid-suite", detail).with_diagnostics(diagnostics))
    }

    /// Compiles the spec with its manifests; a spec error is a 422 with every located
    /// diagnostic.
    pub fn compile(&self, limits: &Limits) -> Result<Agent, Problem> {
        let format = match self.format {
            BundleFormat::Toml => SpecFormat::Toml,
            BundleFormat::Json => SpecFormat::Json,
        };
        let name = match self.format {
            BundleFormat::Toml => SPEC_NAME,
            BundleFormat::Json => "agent.json",
        };
        promptstack::registry::compile_in_memory(
            self.spec.as_bytes(),
            name,
            format,
            &self.files,
            limits,
        )
        .map_err(load_problem)
    }
}

/// A load error as a 422 with its located diagnostics.
pub fn load_problem(error: promptstack::registry::LoadError) -> Problem {
    use promptstack::registry::LoadError;
    match error {
        LoadError::Spec(e) => spec_problem("invalid-spec", &e),
        other => Problem::unprocessable("invalid-spec", other.to_string()),
    }
}

/// A spec (or send) error as a 422 with its located diagnostics.
pub fn spec_problem(code: &str, error: &promptstack::SpecError) -> Problem {
    let diagnostics = error
        .diagnostics
        .iter()
        .filter_map(|d| serde_json::to_value(d).ok())
        .collect();
    Problem::unprocessable(code, error.to_string()).with_diagnostics(diagnostics)
}

/// `value` with every object's keys in sorted order.
fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}
