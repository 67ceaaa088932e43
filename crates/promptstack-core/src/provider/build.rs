//! Building one request: the steps every format shares, around the format's own [`Wire`].
//!
//! [`build`] composes the target and splits its system text; [`build_layout`] takes the system
//! chunks and tools as given (the simulator's naive baseline passes its own), appends the send's
//! user message, lays the request out as units (the format's head, then the shared message
//! loop), counts tokens, places breakpoints, fingerprints their prefixes, writes the body once
//! (each unit's canonical text spliced into the format's skeleton) and prices it. Every step is
//! linear in the number of units.

use std::sync::Arc;

use super::plan::{self, Boundary, Breakpoint, CachePlan, CacheState, PlanUnit, Region};
use super::wire::{self, BodyConfig, Chunk, Inputs, Place, Wire};
use super::{Conversation, Format, Message, Request, RequestOptions, Rules, canonical};
use crate::assemble::Assembly;
use crate::caches::ToolUnit;
use crate::compose::{Composition, Slot};
use crate::diagnostic::Diagnostic;
use crate::error::{Error, ErrorKind};
use crate::spec::{Stability, Trust};
use crate::tokens::{Counting, TokenCounter};
use crate::toolset::Tool;

/// What a request borrows from the compiled agent: its name (the default OpenAI cache key) and
/// its memos.
pub(crate) struct AgentParts<'a> {
    pub name: &'a str,
    pub counter: &'a TokenCounter,
    pub tool_units: &'a crate::caches::ToolUnits,
}

/// What one request is built from.
pub(crate) struct RequestConfig<'a> {
    pub assembly: &'a Assembly,
    pub conversation: &'a Conversation,
    pub rules: &'a Rules,
    pub options: &'a RequestOptions,
}

/// The system text and the tools a request carries, in the order sent.
pub(crate) struct Layout<'a> {
    pub chunks: Vec<Chunk<'a>>,
    pub tools: &'a [Arc<Tool>],
}

/// The implementation of a format.
fn wire(format: Format) -> &'static dyn Wire {
    match format {
        Format::Anthropic => &super::anthropic::Anthropic,
        Format::OpenaiChat => &super::openai::CHAT,
        Format::OpenaiResponses => &super::openai::RESPONSES,
        Format::Gemini => &super::gemini::Gemini,
    }
}

/// Builds a request from the target's composition: its system text split at the stability
/// boundaries, and the assembly's tools.
pub(crate) fn build(agent: &AgentParts<'_>, config: &RequestConfig<'_>) -> Result<Request, Error> {
    let composition = config.assembly.compose(&config.options.target)?;
    let layout = Layout {
        chunks: split_system(&composition),
        tools: config.assembly.toolset().tools(),
    };
    build_layout(agent, config, &composition, layout)
}

/// Builds a request with the given system chunks and tools.
pub(crate) fn build_layout(
    agent: &AgentParts<'_>,
    config: &RequestConfig<'_>,
    composition: &Composition,
    layout: Layout<'_>,
) -> Result<Request, Error> {
    let RequestConfig {
        assembly,
        conversation,
        rules,
        options,
    } = *config;
    let wire = wire(options.format);
    let model = options
        .model
        .clone()
        .unwrap_or_else(|| assembly.model().id.clone());
    let rule = rules.find(options.format.family(), &model)?;
    let mut diagnostics = composition.diagnostics.clone();
    let user_message = match assembly.user_message() {
        Some(text) => Some(composition.user_message(text, assembly.separator())),
        None => {
            if !composition.user.is_empty() {
                diagnostics.push(
                    Diagnostic::warning(
                        "notes-without-message",
                        format!(
                            "the send has no user message, so the user-slot notes of `{}` are not placed on this request",
                            options.target
                        ),
                    )
                    .hint("notes belong to the user message that starts a turn; a tool-call continuation replays that message from the conversation"),
                );
            }
            None
        }
    };
    if let Some(Message::Assistant { tool_calls, .. }) = conversation.messages.last()
        && !tool_calls.is_empty()
    {
        return Err(Error::new(
            ErrorKind::Request,
            format!(
                "the conversation ends with tool call `{}`, which needs a result before the next request",
                tool_calls[0].id
            ),
        ));
    }
    let appended = user_message.clone().map(|text| Message::User { text });
    let messages: Vec<&Message> = conversation
        .messages
        .iter()
        .chain(appended.iter())
        .collect();
    if messages.is_empty() {
        return Err(Error::new(
            ErrorKind::Request,
            "nothing to send: the conversation is empty and the send has no user message",
        ));
    }
    wire.check(options)?;
    let history_end = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
        .and_then(|i| i.checked_sub(1));
    let counting = assembly.counting();
    let inputs = Inputs {
        chunks: layout.chunks,
        tools: tool_units(agent, wire, counting, layout.tools),
        messages,
        conversation,
        history_end,
        explicit: rule.explicit_breakpoints,
        cached_content: options.cached_content.is_some(),
    };
    let mut pieces =
        Vec::with_capacity(inputs.tools.len() + inputs.chunks.len() + inputs.messages.len());
    wire.head(&inputs, &mut pieces);
    wire::messages(wire, &inputs, &mut pieces);
    if let Some(last) = pieces.last_mut()
        && last.region == Region::Messages
    {
        last.boundary = Some(Boundary::Tail);
    }
    let units = units(
        agent,
        wire,
        &mut pieces,
        counting,
        rule.explicit_breakpoints,
    );
    let tool_turn = assembly.user_message().is_none() && conversation.continues_tool_turn();
    let (placed, skipped) = plan::place(&units, rule, options.expected_gap_seconds, tool_turn);
    let at: Vec<usize> = placed.iter().map(|p| p.unit).collect();
    let unit_bytes: Vec<&str> = units.iter().map(|u| u.bytes.as_str()).collect();
    let fingerprints = plan::fingerprints(&[options.format.as_str(), &model], &unit_bytes, &at);
    let prefix_tokens = plan::prefix_tokens(&units);
    let breakpoints: Vec<Breakpoint> = placed
        .iter()
        .zip(fingerprints)
        .map(|(p, fingerprint)| Breakpoint {
            unit: p.unit,
            at: units[p.unit].at.clone(),
            boundary: p.boundary,
            ttl: rule.ttls[p.ttl].name.clone(),
            prefix_tokens: prefix_tokens[p.unit],
            fingerprint,
        })
        .collect();
    // Units are written once: unmarked ones from their canonical text, marked ones again with
    // their marker. `placed` is in unit order.
    let mut marked: Vec<(usize, String)> = Vec::with_capacity(placed.len());
    for p in &placed {
        let piece = &mut pieces[p.unit];
        if let Some(shared) = &piece.shared {
            piece.value = shared.value.clone();
        }
        wire.mark(&mut piece.value, &rule.ttls[p.ttl].name);
        marked.push((p.unit, canonical::to_string(&piece.value)));
    }
    // An explicit breakpoint lifetime and `prompt_cache_retention` are never sent together.
    let retention = if placed.is_empty() {
        options
            .expected_gap_seconds
            .filter(|gap| *gap >= rule.automatic_seconds)
            .and_then(|gap| rule.retention.iter().find(|r| r.seconds > gap))
    } else {
        None
    };
    let skeleton = wire.skeleton(
        &pieces,
        &BodyConfig {
            model: &model,
            options,
            explicit: rule.explicit_breakpoints,
            marked: !placed.is_empty(),
            retention: retention.map(|r| r.name.as_str()),
            agent: agent.name,
            fingerprint: assembly.fingerprint(),
        },
    );
    let mut next = marked.iter().peekable();
    let texts: Vec<&str> = units
        .iter()
        .enumerate()
        .map(|(i, u)| match next.next_if(|(at, _)| *at == i) {
            Some((_, text)) => text.as_str(),
            None => u.bytes.as_str(),
        })
        .collect();
    let capacity = texts.iter().map(|t| t.len()).sum::<usize>() + 1024;
    let body = canonical::to_string_spliced(&skeleton, &texts, capacity);
    let retention_seconds = retention.map(|r| r.seconds);
    let mut state = CacheState::new();
    let cold = state.apply(&units, &placed, rule, retention_seconds, 0);
    let repeat = state.apply(&units, &placed, rule, retention_seconds, 1);
    let plan = CachePlan {
        rules_version: rules.version.clone(),
        rule: plan::RuleSummary {
            provider: rule.provider.as_str(),
            models: rule.models.clone(),
            min_tokens: rule.min_tokens,
            source: rule.source.clone(),
            date: rule.date.clone(),
        },
        breakpoints,
        skipped,
        retention: retention.map(|r| r.name.clone()),
        total_tokens: prefix_tokens.last().copied().unwrap_or(0),
        cold,
        repeat,
    };
    Ok(Request {
        format: options.format,
        model,
        target: composition.target.clone(),
        body,
        user_message,
        plan,
        units,
        diagnostics,
        placed,
        retention_seconds,
    })
}

/// The request's units: each piece's canonical bytes, tokens, place in the body and prefix
/// identity (its label moves to the unit). Places are counted as the units go, so this is linear
/// in the number of units.
fn units(
    agent: &AgentParts<'_>,
    wire: &dyn Wire,
    pieces: &mut [wire::Piece<'_>],
    counting: Counting,
    explicit: bool,
) -> Vec<PlanUnit> {
    let mut units = Vec::with_capacity(pieces.len());
    let mut prefix = 0u128;
    let mut in_region = [0usize; 3];
    let mut group = usize::MAX;
    let mut part = 0usize;
    for piece in pieces.iter_mut() {
        let (bytes, tokens) = match &piece.shared {
            Some(shared) => (shared.bytes.clone(), shared.tokens),
            None => {
                let bytes = canonical::to_string(&piece.value);
                let text = piece.count.as_deref().unwrap_or(&bytes);
                let tokens = agent.counter.count(counting, text).count;
                (bytes, tokens)
            }
        };
        prefix = plan::chain(prefix, bytes.as_bytes());
        if piece.region == Region::Messages {
            if piece.group != group {
                group = piece.group;
                part = 0;
            } else {
                part += 1;
            }
        }
        let region = match piece.region {
            Region::Tools => 0,
            Region::System => 1,
            Region::Messages => 2,
        };
        let place = Place {
            region: piece.region,
            nth: in_region[region],
            group: piece.group,
            part,
            after_system: in_region[1] > 0,
            explicit,
        };
        in_region[region] += 1;
        units.push(PlanUnit {
            at: wire.pointer(&place),
            label: std::mem::take(&mut piece.label),
            region: piece.region,
            tokens,
            boundary: piece.boundary,
            markable: piece.markable,
            prefix,
            bytes,
        });
    }
    units
}

/// The tools as request units of a format, memoised per tool (tool lists repeat on every request
/// of a thread). No lock is held while a definition is serialised or counted.
fn tool_units(
    agent: &AgentParts<'_>,
    wire: &dyn Wire,
    counting: Counting,
    tools: &[Arc<Tool>],
) -> Vec<Arc<ToolUnit>> {
    let key = |tool: &Arc<Tool>| {
        (
            wire.format().as_str(),
            counting.encoding,
            Arc::as_ptr(tool) as usize,
        )
    };
    let mut units = agent.tool_units.get_all(tools.iter().map(key));
    let mut built = Vec::new();
    for (tool, unit) in tools.iter().zip(&mut units) {
        if unit.is_none() {
            let value = wire.tool(tool);
            let bytes = canonical::to_string(&value);
            let tokens = agent.counter.count(counting, &bytes).count;
            let fresh = Arc::new(ToolUnit {
                name: tool.name.clone(),
                value,
                bytes,
                tokens,
            });
            built.push((key(tool), (tool.clone(), fresh.clone())));
            *unit = Some(fresh);
        }
    }
    agent.tool_units.remember(built);
    units.into_iter().flatten().collect()
}

/// Splits a target's system text at its stability boundaries: after the leading run of
/// platform- and author-controlled stable parts (agent-wide), after the leading stable run up to
/// tenant-controlled parts (tenant-wide), and at the end of the stable prefix. Each chunk ends at a
/// part's end, so a separator starts the next chunk and the chunks join to the system text.
pub(crate) fn split_system(composition: &Composition) -> Vec<Chunk<'_>> {
    let system = &composition.system;
    if system.is_empty() {
        return Vec::new();
    }
    let parts: Vec<_> = composition
        .parts
        .iter()
        .filter(|p| p.slot == Slot::System)
        .collect();
    let stable_run = parts
        .iter()
        .take_while(|p| p.stability == Stability::Stable)
        .count();
    let run_while = |limit: Trust| {
        parts[..stable_run]
            .iter()
            .take_while(|p| p.trust <= limit)
            .count()
    };
    let agent = run_while(Trust::Author);
    let tenant = run_while(Trust::Tenant);
    let mut cuts: Vec<(usize, Boundary)> = Vec::new();
    for (count, boundary) in [
        (agent, Boundary::Agent),
        (tenant, Boundary::Tenant),
        (stable_run, Boundary::Stable),
    ] {
        if count == 0 {
            continue;
        }
        let end = parts[count - 1].range.end;
        match cuts.last_mut() {
            // Two boundaries at one place: the end of the stable half names it; otherwise the
            // wider reuse (agent-wide over tenant-wide) does.
            Some(last) if last.0 == end => {
                if boundary == Boundary::Stable {
                    last.1 = boundary;
                }
            }
            _ => cuts.push((end, boundary)),
        }
    }
    let mut chunks = Vec::new();
    let mut start = 0;
    let label = |from: usize, to: usize| {
        let ids: Vec<&str> = parts
            .iter()
            .filter(|p| p.range.start >= from && p.range.end <= to)
            .map(|p| &*p.id)
            .collect();
        match ids.as_slice() {
            [] => String::new(),
            [one] => (*one).to_owned(),
            [first, .., last] => format!("{first} … {last}"),
        }
    };
    for (end, boundary) in cuts {
        if end > start {
            chunks.push(Chunk {
                text: &system[start..end],
                label: label(start, end),
                boundary: Some(boundary),
            });
            start = end;
        }
    }
    if start < system.len() {
        chunks.push(Chunk {
            text: &system[start..],
            label: label(start, system.len()),
            boundary: None,
        });
    }
    chunks
}
