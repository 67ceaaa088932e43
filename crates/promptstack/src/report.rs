//! Reports as data: what `explain` and `lint` show, for every front end that prints or returns
//! them (the command line's `--json`, the language packages).
//!
//! Both are plain serialisable structs built from an [`Agent`] and its assemblies, so a report
//! printed by the command line and one returned to an application cannot differ.

use promptstack_core::compose::Composition;
use promptstack_core::diagnostic::{Diagnostic, Severity};
use promptstack_core::inject::InjectionPreview;
use promptstack_core::provider::{CachePlan, Conversation, Format, RequestOptions, Rules};
use promptstack_core::tokens::{Counting, Encoding, TokenCount};
use promptstack_core::{Agent, Assembly, Error, SendContext};
use serde::Serialize;

/// An explained assembly: the assembly JSON, what each target composes with its token counts
/// (and the blocks its token budget shed, with the reason), a stage's injectable blocks, and for a
/// chosen provider format the cache breakpoints each target's request would carry. Serialised, it
/// is the output of `promptstack explain --json`.
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
    /// For a chosen provider format: each target's planned cache breakpoints, in target order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub breakpoints: Vec<PlannedBreakpoints>,
}

/// The cache plan of one target's provider request for the send: where its breakpoints go,
/// which stability boundaries were left without one and why, and what it costs.
#[derive(Debug, Serialize)]
pub struct PlannedBreakpoints {
    /// The target.
    pub target: String,
    /// The request format planned for.
    pub format: Format,
    /// The model id the request goes to.
    pub model: String,
    /// The plan: breakpoints, skipped boundaries, costs.
    pub plan: CachePlan,
}

/// The provider format (and rules table) to plan cache breakpoints for in [`explain`].
#[derive(Debug, Clone, Copy)]
pub struct BreakpointFormat<'r> {
    /// The request format.
    pub format: Format,
    /// The rules table to plan with ([`Rules::bundled`] unless the caller has its own).
    pub rules: &'r Rules,
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

/// Explains `assembly` (assembled from `send`): `target` alone, or every target of the spec;
/// with `format`, also the cache breakpoints of each target's request for the send (a new
/// conversation whose only message is the send's `user_message`).
///
/// # Errors
///
/// [`ErrorKind::NotFound`](promptstack_core::ErrorKind::NotFound) for an unknown target, any
/// error of composing a target or previewing the stage's injections, and with `format` any error
/// of building the request ([`ErrorKind::Request`](promptstack_core::ErrorKind::Request) for a
/// send without a `user_message`, [`ErrorKind::Rules`](promptstack_core::ErrorKind::Rules) for a
/// model the rules do not cover).
pub fn explain<'a>(
    agent: &'a Agent,
    send: &SendContext,
    assembly: &'a Assembly,
    target: Option<&str>,
    format: Option<BreakpointFormat<'_>>,
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
    let breakpoints = match format {
        None => Vec::new(),
        Some(planned) => targets
            .iter()
            .map(|t| plan_breakpoints(agent, assembly, &t.composition.target, planned))
            .collect::<Result<_, _>>()?,
    };
    Ok(Explanation {
        agent: agent.name(),
        assembly,
        targets,
        injections: agent.preview_injections(send)?,
        breakpoints,
    })
}

/// Plans the cache breakpoints of `target`'s request for the send `assembly` was built from, in
/// one format.
///
/// # Errors
///
/// As [`Agent::request`].
pub fn plan_breakpoints(
    agent: &Agent,
    assembly: &Assembly,
    target: &str,
    format: BreakpointFormat<'_>,
) -> Result<PlannedBreakpoints, Error> {
    let options = RequestOptions::new(format.format, target);
    let request = agent.request(assembly, &Conversation::default(), format.rules, &options)?;
    Ok(PlannedBreakpoints {
        target: request.target,
        format: request.format,
        model: request.model,
        plan: request.plan,
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
/// Token budgets are checked too: a target whose pinned blocks alone exceed its budget is an
/// `over-budget` error, and a block a budget sheds on some send is a `shed-block` warning (with
/// that send). Without sends, blocks with literal text are still held to their `max_tokens` and
/// targets to their budgets (counted as o200k, an estimate). An assembly or composition that
/// fails is a finding (`assembly-failed`, `compose-failed`), not an error, so one report covers
/// every send.
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
            match assembly.compose(target) {
                Ok(composition) => {
                    findings.extend(composition.diagnostics.into_iter().map(finding))
                }
                Err(error) => {
                    let diagnostic =
                        Diagnostic::error("compose-failed", error.to_string()).subject(target);
                    findings.push(finding(diagnostic));
                }
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
                .chain(agent.pinned_over_budget(counting))
                .map(spec_finding),
        );
    }
    findings
}
