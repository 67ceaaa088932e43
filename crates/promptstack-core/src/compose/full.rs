//! "Copy full prompt": the exact text a stage's model receives, with the warnings a reader needs.

use serde::Serialize;

use super::Part;
use crate::assemble::Assembly;
use crate::diagnostic::{Diagnostic, Severity};
use crate::error::{Error, ErrorKind};

/// The full prompt of one target: authored text with tokens expanded and variables substituted,
/// then every platform append in build order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FullPrompt {
    /// The target it was composed for.
    pub target: String,
    /// The system text, exactly as sent.
    pub text: String,
    /// The notes for the last user message (empty when there are none).
    pub user: String,
    /// Every block's place in the texts, in build order.
    pub parts: Vec<Part>,
    /// Everything a reader of the copy should know: tool tokens left unresolved, variables that
    /// rendered empty, switched-off compliance guidance, tenant instructions that could not be
    /// read, malformed overrides.
    pub warnings: Vec<Diagnostic>,
}

/// The target a full prompt is rendered for: `target`, or the only one of `ids`.
pub(crate) fn full_prompt_target<'a>(
    ids: impl Iterator<Item = &'a str>,
    target: Option<&str>,
) -> Result<String, Error> {
    super::choose_target(ids, target)
        .map_err(|several| Error::new(ErrorKind::NotFound, several.message("name one")))
}

/// The full prompt of `target` from a send's assembly: its composition, and the warnings a
/// reader needs.
pub(crate) fn render_full(assembly: &Assembly, target: String) -> Result<FullPrompt, Error> {
    let composition = assembly.compose(&target)?;
    let warnings = assembly
        .diagnostics()
        .filter(|d| d.severity >= Severity::Warning)
        .cloned()
        .collect();
    Ok(FullPrompt {
        target,
        text: composition.system,
        user: composition.user,
        parts: composition.parts,
        warnings,
    })
}
