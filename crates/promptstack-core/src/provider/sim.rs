//! The cache simulator: a multi-turn thread replayed against the rules table, next to a naive
//! baseline computed in the same run.
//!
//! Each turn takes the next send (in order, cycling) for its user message and volatile variables,
//! on top of the first send's stable inputs (one thread keeps its model, settings and user); the
//! clock advances by the gap; the conversation grows by the user message as sent and an answer;
//! every third turn the model calls a tool first, which adds a continuation request two seconds
//! later. Synthetic MCP servers list their tools in a different order on every turn and now and
//! then one fails (a seeded, deterministic generator decides: the core draws no randomness).
//!
//! Both assemblies see the same content. Ours is the request the builders make. The naive
//! baseline moves the per-send system notes (the timestamp) to the top of the system text and
//! sends the tools in discovery order (local tools as declared, then each server's tools as
//! listed), as a hand-made prompt layer typically does; it is planned with the same rules.

use std::sync::Arc;

use serde::Serialize;

use crate::compose::{Composition, Slot};
use crate::context::SendContext;
use crate::error::{Error, ErrorKind};
use crate::ir::AgentInner;
use crate::provider::plan::{Boundary, CacheState, Cost, Region};
use crate::provider::{
    Chunk, Conversation, Layout, Message, Request, RequestConfig, RequestOptions, Rules, ToolCall,
    build_layout,
};
use crate::spec::Stability;
use crate::tools::mcp::{McpFailure, McpFailureStage, McpServerListing, McpServerStatus, McpTool};
use crate::toolset::{Tool, ToolOrigin};

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// How many user turns.
    pub turns: u32,
    /// Seconds between turns.
    pub gap_seconds: u32,
    /// The request options (format, target, model, …); the expected gap is set from `gap_seconds`.
    pub request: RequestOptions,
    /// The chance, per turn, that one synthetic MCP server fails discovery.
    pub mcp_failure_rate: f64,
    /// The seed of the deterministic generator that reorders and fails MCP servers.
    pub seed: u64,
    /// Stops the simulation before its next turn once set: a caller that no longer waits for
    /// the report (a request that timed out) frees the thread at once instead of after every
    /// turn. Never set: the simulation runs to its end.
    pub cancel: SimCancel,
}

/// A flag that stops a simulation between turns ([`SimConfig::cancel`]), set from any thread.
/// Clones share the flag; two flags are equal when they are the same flag.
#[derive(Debug, Clone, Default)]
pub struct SimCancel(Arc<std::sync::atomic::AtomicBool>);

impl SimCancel {
    /// A flag not set.
    pub fn new() -> SimCancel {
        SimCancel::default()
    }

    /// Sets the flag: the simulation stops before its next turn.
    pub fn cancel(&self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the flag is set.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl PartialEq for SimCancel {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Totals of one side of a simulation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct SimFigures {
    /// Requests sent.
    pub requests: u32,
    /// Input tokens of all requests.
    pub input_tokens: u64,
    /// Tokens read from the cache.
    pub read: u64,
    /// Tokens written to the cache.
    pub written: u64,
    /// Tokens billed uncached.
    pub uncached: u64,
    /// `read / input_tokens`.
    pub read_share: f64,
    /// `written / input_tokens`.
    pub written_share: f64,
    /// `uncached / input_tokens`.
    pub uncached_share: f64,
    /// The price of all requests divided by their price without caching.
    pub relative_cost: f64,
    /// System and tool tokens of every request after the first.
    pub prefix_tokens: u64,
    /// Of those, the tokens read from the cache.
    pub prefix_read: u64,
    /// `prefix_read / prefix_tokens`: the share of system + tool tokens served from the cache
    /// after the first request.
    pub prefix_read_share: f64,
    /// System and tool tokens after the first request, without the per-send system text (the
    /// notes after the stable half, which no later send can reuse).
    pub stable_prefix_tokens: u64,
    /// Of those, the tokens read from the cache.
    pub stable_prefix_read: u64,
    /// `stable_prefix_read / stable_prefix_tokens`.
    pub stable_prefix_read_share: f64,
    #[serde(skip)]
    price: f64,
}

impl SimFigures {
    fn add(&mut self, request: &Request, cost: Cost, first: bool) {
        self.requests += 1;
        self.input_tokens += u64::from(request.plan.total_tokens);
        self.read += u64::from(cost.read);
        self.written += u64::from(cost.written);
        self.uncached += u64::from(cost.uncached);
        self.price += cost.price;
        if !first {
            // Walk the units in prefix order: the first `cost.read` tokens came from the cache.
            let mut left = cost.read;
            for unit in &request.units {
                let read = unit.tokens.min(left);
                left -= read;
                if unit.region == Region::Messages {
                    continue;
                }
                self.prefix_tokens += u64::from(unit.tokens);
                self.prefix_read += u64::from(read);
                // The per-send remainder of the system text closes no stability boundary.
                if unit.region == Region::Tools || unit.boundary.is_some() {
                    self.stable_prefix_tokens += u64::from(unit.tokens);
                    self.stable_prefix_read += u64::from(read);
                }
            }
        }
    }

    fn finish(&mut self) {
        let share = |part: u64, whole: u64| {
            if whole == 0 {
                0.0
            } else {
                round(part as f64 / whole as f64)
            }
        };
        self.read_share = share(self.read, self.input_tokens);
        self.written_share = share(self.written, self.input_tokens);
        self.uncached_share = share(self.uncached, self.input_tokens);
        self.prefix_read_share = share(self.prefix_read, self.prefix_tokens);
        self.stable_prefix_read_share = share(self.stable_prefix_read, self.stable_prefix_tokens);
        self.relative_cost = if self.input_tokens == 0 {
            1.0
        } else {
            round(self.price / self.input_tokens as f64)
        };
    }
}

/// The tokens of one turn's requests (the user's request and any continuation after a tool call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub struct SimCounts {
    /// Requests sent in the turn.
    pub requests: u32,
    /// Tokens read from the cache.
    pub read: u64,
    /// Tokens written to the cache.
    pub written: u64,
    /// Tokens billed uncached.
    pub uncached: u64,
}

impl SimCounts {
    fn add(&mut self, cost: Cost) {
        self.requests += 1;
        self.read += u64::from(cost.read);
        self.written += u64::from(cost.written);
        self.uncached += u64::from(cost.uncached);
    }
}

/// One user turn of a simulation, for both sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SimTurn {
    /// The turn's number, from 1.
    pub turn: u32,
    /// Whether a synthetic MCP server failed on this turn.
    pub mcp_failed: bool,
    /// Our requests.
    pub ours: SimCounts,
    /// The naive baseline's.
    pub naive: SimCounts,
}

fn round(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The result of a simulation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimReport {
    /// The rules version used.
    pub rules_version: String,
    /// The request format.
    pub format: &'static str,
    /// The model.
    pub model: String,
    /// The target composed.
    pub target: String,
    /// User turns simulated.
    pub turns: u32,
    /// Seconds between turns.
    pub gap_seconds: u32,
    /// Turns on which a synthetic MCP server failed.
    pub mcp_failures: u32,
    /// Our requests.
    pub ours: SimFigures,
    /// The naive baseline's.
    pub naive: SimFigures,
    /// Every user turn in order, for a per-turn chart.
    pub per_turn: Vec<SimTurn>,
}

/// SplitMix64: a tiny deterministic generator, seeded by the caller.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// Two synthetic MCP servers with a handful of tools each.
fn synthetic_servers() -> Vec<McpServerListing> {
    let tool = |name: &str, description: &str| McpTool {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        input_schema: Arc::new(serde_json::json!({
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["query"]
        })),
    };
    vec![
        McpServerListing {
            server: "notes".into(),
            title: None,
            status: McpServerStatus::Ready {
                tools: vec![
                    tool(
                        "search_notes",
                        "Search the user's notes by keyword. If nothing matches, try a broader term.",
                    ),
                    tool(
                        "read_note",
                        "Read one note by id, as Markdown. Use an id from search_notes.",
                    ),
                    tool(
                        "list_notebooks",
                        "List the user's notebooks with their ids and note counts.",
                    ),
                ],
            },
        },
        McpServerListing {
            server: "tickets".into(),
            title: None,
            status: McpServerStatus::Ready {
                tools: vec![
                    tool(
                        "find_tickets",
                        "Find support tickets by text, status or assignee. Returns ids, titles and states.",
                    ),
                    tool(
                        "get_ticket",
                        "Read one ticket with its comments. If the id is unknown, search first.",
                    ),
                    tool(
                        "ticket_stats",
                        "Count open, pending and closed tickets for a queue.",
                    ),
                ],
            },
        },
    ]
}

/// This turn's listings: servers and tools reordered, and now and then one server failed.
fn listings(
    base: &[McpServerListing],
    rng: &mut SplitMix,
    failure_rate: f64,
) -> (Vec<McpServerListing>, bool) {
    let mut servers = base.to_vec();
    rng.shuffle(&mut servers);
    for server in &mut servers {
        if let McpServerStatus::Ready { tools } = &mut server.status {
            rng.shuffle(tools);
        }
    }
    let failed = rng.chance(failure_rate);
    if failed {
        let victim = rng.below(servers.len());
        servers[victim].status = McpServerStatus::Failed {
            failure: McpFailure {
                stage: McpFailureStage::List,
                timed_out: true,
                message: "listing tools timed out".into(),
            },
        };
    }
    (servers, failed)
}

/// The naive layout: per-send system parts first, then the rest, as one system chunk.
fn naive_system(composition: &Composition) -> String {
    let parts: Vec<_> = composition
        .parts
        .iter()
        .filter(|p| p.slot == Slot::System)
        .collect();
    let (volatile, stable): (Vec<_>, Vec<_>) = parts
        .into_iter()
        .partition(|p| p.stability == Stability::Volatile);
    let mut texts: Vec<&str> = Vec::new();
    for part in volatile.iter().chain(stable.iter()) {
        texts.push(&composition.system[part.range.clone()]);
    }
    texts.join("\n\n")
}

/// The naive tool order: local tools as declared, then MCP tools as discovered.
fn naive_tools(
    agent: &AgentInner,
    tools: &[Arc<Tool>],
    listings: &[McpServerListing],
) -> Vec<Arc<Tool>> {
    let key = |tool: &Tool| -> (usize, usize) {
        match &tool.origin {
            ToolOrigin::Local => (
                0,
                agent
                    .spec
                    .tools
                    .iter()
                    .position(|t| t.name == tool.name)
                    .unwrap_or(usize::MAX),
            ),
            ToolOrigin::Mcp { server, tool: name } => {
                let at = listings
                    .iter()
                    .position(|l| &l.server == server)
                    .unwrap_or(0);
                let within = match &listings[at].status {
                    McpServerStatus::Ready { tools } => {
                        tools.iter().position(|t| &t.name == name).unwrap_or(0)
                    }
                    McpServerStatus::Failed { .. } => 0,
                };
                (1 + at, within)
            }
        }
    };
    let mut ordered = tools.to_vec();
    ordered.sort_by_key(|t| key(t));
    ordered
}

fn answer(turn: u32) -> String {
    format!(
        "Here is what I found for question {turn}. The short answer comes first, then the detail \
         that supports it, with each claim tied to the source it came from. If anything here \
         needs checking against your own records, say which part and I will look again."
    )
}

fn tool_result(turn: u32) -> String {
    let mut text = format!("[Source {turn}] (cite as [{turn}]) Result for turn {turn}.");
    for i in 0..12 {
        text.push_str(&format!(
            " Paragraph {i} of the fetched page describes prices, dates and the method used to collect them."
        ));
    }
    text
}

impl AgentInner {
    /// The implementation of [`Agent::simulate_cache`](crate::Agent::simulate_cache).
    pub(crate) fn simulate_cache(
        self: &Arc<Self>,
        sends: &[SendContext],
        rules: &Rules,
        config: &SimConfig,
    ) -> Result<SimReport, Error> {
        let Some(first) = sends.first() else {
            return Err(Error::new(
                ErrorKind::Request,
                "the simulation needs at least one send",
            ));
        };
        let mut options = config.request.clone();
        options.expected_gap_seconds = Some(config.gap_seconds);
        let model = options
            .model
            .clone()
            .unwrap_or_else(|| first.model.id.clone());
        options.model = Some(model.clone());
        let rule = rules.find(options.format.family(), &model)?;
        let mut rng = SplitMix(config.seed);
        let servers = synthetic_servers();
        let mut conversation = Conversation::default();
        let mut ours_state = CacheState::new();
        let mut naive_state = CacheState::new();
        let mut ours = SimFigures::default();
        let mut naive = SimFigures::default();
        let mut failures = 0;
        let start = first.now.timestamp().as_second().max(0) as u64;
        let volatile: Vec<&String> = self
            .spec
            .variables
            .iter()
            .filter(|(_, v)| v.stability == Stability::Volatile)
            .map(|(k, _)| k)
            .collect();
        let mut first_request = true;
        let mut per_turn = Vec::with_capacity(config.turns as usize);
        for turn in 0..config.turns {
            if config.cancel.is_cancelled() {
                return Err(Error::new(
                    ErrorKind::Request,
                    format!("the simulation was cancelled after {turn} turns"),
                ));
            }
            let source = &sends[turn as usize % sends.len()];
            let now = start + u64::from(turn) * u64::from(config.gap_seconds);
            let (mcp, failed) = listings(&servers, &mut rng, config.mcp_failure_rate);
            failures += u32::from(failed);
            let mut ctx = first.clone();
            ctx.now = crate::context::Now::new(
                jiff::Timestamp::from_second(now as i64).unwrap_or(first.now.timestamp()),
                first.now.offset(),
            );
            ctx.user_message = Some(
                source
                    .user_message
                    .clone()
                    .unwrap_or_else(|| format!("Follow-up question {turn}.")),
            );
            for name in &volatile {
                match source.variables.get(*name) {
                    Some(value) => ctx.variables.insert((*name).clone(), value.clone()),
                    None => ctx.variables.remove(*name),
                };
            }
            ctx.mcp_servers = mcp.clone();
            let calls_tool = turn % 3 == 2;
            let steps = if calls_tool { 2 } else { 1 };
            let mut this_turn = SimTurn {
                turn: turn + 1,
                mcp_failed: failed,
                ours: SimCounts::default(),
                naive: SimCounts::default(),
            };
            for step in 0..steps {
                let at = now + 2 * step;
                let assembly = self.assemble(&ctx)?;
                let request = self.request(&assembly, &conversation, rules, &options)?;
                let composition = assembly.compose(&options.target)?;
                let system = naive_system(&composition);
                let chunks = if system.is_empty() {
                    Vec::new()
                } else {
                    vec![Chunk {
                        text: &system,
                        label: "system".into(),
                        boundary: Some(Boundary::Stable),
                    }]
                };
                let tools = naive_tools(self, assembly.toolset().tools(), &mcp);
                let baseline = build_layout(
                    &self.request_parts(),
                    &RequestConfig {
                        assembly: &assembly,
                        conversation: &conversation,
                        rules,
                        options: &options,
                    },
                    &composition,
                    Layout {
                        chunks,
                        tools: &tools,
                    },
                )?;
                for (sent, state, figures, counts) in [
                    (&request, &mut ours_state, &mut ours, &mut this_turn.ours),
                    (
                        &baseline,
                        &mut naive_state,
                        &mut naive,
                        &mut this_turn.naive,
                    ),
                ] {
                    let cost =
                        state.apply(&sent.units, &sent.placed, rule, sent.retention_seconds, at);
                    figures.add(sent, cost, first_request);
                    counts.add(cost);
                }
                first_request = false;
                if let Some(text) = request.user_message {
                    conversation.messages.push(Message::User { text });
                }
                if step + 1 < steps {
                    let name = ["search", "fetch_content"]
                        .into_iter()
                        .find(|n| assembly.toolset().contains(n))
                        .or_else(|| assembly.toolset().names().next())
                        .map(str::to_owned);
                    let Some(name) = name else {
                        break;
                    };
                    let id = format!("call_{turn}");
                    conversation.messages.push(Message::Assistant {
                        text: String::new(),
                        tool_calls: vec![ToolCall {
                            id: id.clone(),
                            name,
                            arguments: serde_json::json!({"query": format!("question {turn}")}),
                        }],
                    });
                    conversation.messages.push(Message::Tool {
                        call_id: id,
                        content: tool_result(turn),
                        is_error: false,
                    });
                    ctx.user_message = None;
                }
            }
            conversation.messages.push(Message::Assistant {
                text: answer(turn),
                tool_calls: Vec::new(),
            });
            per_turn.push(this_turn);
        }
        ours.finish();
        naive.finish();
        Ok(SimReport {
            rules_version: rules.version.clone(),
            format: options.format.as_str(),
            model,
            target: options.target.clone(),
            turns: config.turns,
            gap_seconds: config.gap_seconds,
            mcp_failures: failures,
            ours,
            naive,
            per_turn,
        })
    }
}
