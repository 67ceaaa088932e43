//! "Copy full prompt": the exact text a stage's model receives, with the warnings a reader needs.

use serde::Serialize;

use crate::compose::Part;
use crate::context::SendContext;
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

impl crate::Agent {
    /// Renders the full prompt of `target` (or of the only target) for a send. It is the live
    /// assembly's own composition, so the copy is the wire text; rendering never degrades: any
    /// failure is an error rather than a different text.
    ///
    /// # Errors
    ///
    /// As [`crate::Agent::assemble`] and [`crate::Assembly::compose`]; [`ErrorKind::NotFound`]
    /// when no target is given and the spec has several.
    pub fn render_full(
        &self,
        ctx: &SendContext,
        target: Option<&str>,
    ) -> Result<FullPrompt, Error> {
        let target = match target {
            Some(t) => t.to_owned(),
            None => {
                let ids: Vec<&str> = self.target_ids().collect();
                match ids.as_slice() {
                    [only] => (*only).to_owned(),
                    _ => {
                        return Err(Error::new(
                            ErrorKind::NotFound,
                            format!(
                                "this spec has several targets ({}); name one",
                                ids.join(", ")
                            ),
                        ));
                    }
                }
            }
        };
        let assembly = self.assemble(ctx)?;
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
}
