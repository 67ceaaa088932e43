//! Reports as data: what `explain` and `lint` show, for every front end that prints or returns
//! them (the command line's `--json`, the language packages).
//!
//! Both are plain serialisable structs built from an [`Agent`] and its assemblies, so a report
//! printed by the command line and one returned to an application cannot differ.

use promptstack_core::inject::InjectionPreview;
use promptstack_core::tokens::{Counting, Encoding, TokenCount};
use promptstack_core::{Agent, Assembly, Composition, Diagnostic, Error, SendContext, Severity};
use serde::Serialize;

/// An explained assembly: the assembly JSON, what each target composes with its token counts,
/// and a stage's injectable blocks. Serialised, it is the output of `promptstack explain --json`.
#[derive(Debug, Serialize)]
pub struct Explanation<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// The assembly, in the assembly JSON format.
    pub assembly: &'a Assembly,
    /// Each composed target, in the order asked for.
    pub targets: Vec<TargetReport>,
    /// A stage's injectable blocks with their exact text and state (removed ones included).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub injections: Vec<InjectionPreview>,
}

/// One composed target with the token counts of its two texts.
#[derive(Debug, Serialize)]
pub struct TargetReport {
    /// The composition.
    #[serde(flatten)]
    pub composition: Composition,
    /// Tokens of the system text.
    pub system_tokens: TokenCount,
    /// Tokens of the user-slot text.
    pub user_tokens: TokenCount,
}

/// Explains `assembly` (assembled from `send`): `target` alone, or every target of the spec.
///
/// # Errors
///
/// [`ErrorKind::NotFound`](promptstack_core::ErrorKind::NotFound) for an unknown target, and any
/// error of composing a target or previewing the stage's injections.
pub fn explain<'a>(
    agent: &'a Agent,
    send: &SendContext,
    assembly: &'a Assembly,
    target: Option<&str>,
) -> Result<Explanation<'a>, Error> {
    let counting = assembly.counting();
    let report = |composition: Composition| TargetReport {
        system_tokens: agent.count_tokens(counting, &composition.system),
        user_tokens: agent.count_tokens(counting, &composition.user),
        composition,
    };
    let targets = match target {
        Some(target) => vec![report(assembly.compose(target)?)],
        None => assembly
            .target_ids()
            .map(|t| assembly.compose(t).map(report))
            .collect::<Result<_, _>>()?,
    };
    Ok(Explanation {
        agent: agent.name(),
        assembly,
        targets,
        injections: agent.preview_injections(send)?,
    })
}

/// One lint finding: a diagnostic, and the send it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The send the finding is about (absent for findings about the spec alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send: Option<String>,
    /// The finding.
    #[serde(flatten)]
    pub diagnostic: Diagnostic,
}

/// Lints an agent, and checks it against each named send: the spec's own findings, then for
/// every send the findings of assembling it and of composing each target.
///
/// Without sends, blocks with literal text are still held to their `max_tokens` (counted as
/// o200k, an estimate). An assembly or composition that fails is a finding (`assembly-failed`,
/// `compose-failed`), not an error, so one report covers every send.
pub fn lint<'a>(
    agent: &Agent,
    sends: impl IntoIterator<Item = (&'a str, &'a SendContext)>,
) -> Vec<Finding> {
    let spec_finding = |diagnostic| Finding {
        send: None,
        diagnostic,
    };
    let mut findings: Vec<Finding> = agent.lint().iter().cloned().map(spec_finding).collect();
    let mut checked = 0usize;
    for (name, send) in sends {
        checked += 1;
        let finding = |diagnostic| Finding {
            send: Some(name.to_owned()),
            diagnostic,
        };
        let assembly = match agent.assemble(send) {
            Ok(assembly) => assembly,
            Err(error) => {
                let mut diagnostic = Diagnostic::error("assembly-failed", error.to_string());
                if let Some(block) = error.block() {
                    diagnostic = diagnostic.subject(block);
                }
                findings.push(finding(diagnostic));
                continue;
            }
        };
        for diagnostic in assembly.diagnostics() {
            if diagnostic.severity > Severity::Info && !agent.lint().contains(diagnostic) {
                findings.push(finding(diagnostic.clone()));
            }
        }
        for target in assembly.target_ids() {
            if let Err(error) = assembly.compose(target) {
                let diagnostic =
                    Diagnostic::error("compose-failed", error.to_string()).subject(target);
                findings.push(finding(diagnostic));
            }
        }
    }
    if checked == 0 {
        // Without a send, literal texts can still be held to their token limits (o200k estimate).
        let counting = Counting {
            encoding: Encoding::O200k,
            exact: false,
        };
        findings.extend(
            agent
                .literal_token_limits(counting)
                .into_iter()
                .map(spec_finding),
        );
    }
    findings
}
