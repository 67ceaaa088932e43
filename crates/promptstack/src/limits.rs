//! Limits on everything read from outside, and the one bounded reader every input goes through.
//!
//! [`Limit`] is the table of limits an application may change, each with its default, its
//! ceiling and what happens when it is hit; [`Limits`] holds one value per limit. Every file and
//! stream the facade and the command line read goes through [`read`], [`read_within`] or
//! [`read_stdin`], which:
//!
//! - accept regular files only (stdin may be a pipe): a FIFO, a device, a socket or a directory
//!   is refused before anything blocks on it — the file is opened non-blocking and the opened
//!   handle is checked again, so a file swapped for a FIFO in between is refused too;
//! - check the size cap of the input's [`InputKind`] while reading, never reading more than the
//!   cap plus one byte, so a file that never ends (or grows while it is read) costs at most its
//!   cap;
//! - with [`read_within`], resolve symlinks and refuse a file whose real path leaves the allowed
//!   root (a context file's directory, a spec's folder for its manifests).
//!
//! Every error names the input (its kind and path) and says what to do. `docs/limits.md` lists
//! every limit of the product, these and the engine's own; a test keeps the two in step.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use promptstack_core::diagnostic::terminal_safe;

/// A limit an application may change, with its default, ceiling and meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Limit {
    /// The size of an agent spec.
    SpecBytes,
    /// The size of a send context.
    SendBytes,
    /// The size of a conversation file.
    ConversationBytes,
    /// Messages in one conversation.
    ConversationMessages,
    /// The size of a provider rules table.
    RulesBytes,
    /// The size of an MCP server list.
    McpServersBytes,
    /// The size of a sources snapshot.
    SourcesBytes,
    /// The size of a saved assembly.
    AssemblyBytes,
    /// The size of one capability manifest.
    ManifestBytes,
    /// The part of one context file (AGENTS.md, CLAUDE.md) read.
    ContextFileBytes,
    /// The size of one tenant's instructions file.
    TenantBytes,
    /// The size of untrusted content read from stdin to be fenced.
    ContentBytes,
    /// Pages of `tools/list` read from one MCP server.
    McpPages,
    /// Tools accepted from one MCP server.
    McpTools,
    /// Bytes of tool definitions accepted from one MCP server.
    McpBytes,
    /// User turns of one cache simulation.
    SimTurns,
    /// Send contexts one cache simulation reads.
    SimSends,
    /// Bytes of all the send contexts one cache simulation reads.
    SimSendsBytes,
    /// Bytes of Markdown links `cite --mode links` writes for one answer.
    CiteLinkBytes,
    /// Citation runs `cite --json` holds for its final map.
    CiteRuns,
    /// Memory the templates of one assembly may use.
    TemplateMemory,
}

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitUnit {
    /// Bytes; values may be written with a `KiB`, `MiB` or `GiB` suffix.
    Bytes,
    /// A plain count.
    Count,
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

impl Limit {
    /// Every limit, in the order `docs/limits.md` lists them.
    pub const ALL: [Limit; 21] = [
        Limit::SpecBytes,
        Limit::SendBytes,
        Limit::ConversationBytes,
        Limit::ConversationMessages,
        Limit::RulesBytes,
        Limit::McpServersBytes,
        Limit::SourcesBytes,
        Limit::AssemblyBytes,
        Limit::ManifestBytes,
        Limit::ContextFileBytes,
        Limit::TenantBytes,
        Limit::ContentBytes,
        Limit::McpPages,
        Limit::McpTools,
        Limit::McpBytes,
        Limit::SimTurns,
        Limit::SimSends,
        Limit::SimSendsBytes,
        Limit::CiteLinkBytes,
        Limit::CiteRuns,
        Limit::TemplateMemory,
    ];

    /// The limit's name, as `--limit NAME=VALUE` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Limit::SpecBytes => "spec-bytes",
            Limit::SendBytes => "send-bytes",
            Limit::ConversationBytes => "conversation-bytes",
            Limit::ConversationMessages => "conversation-messages",
            Limit::RulesBytes => "rules-bytes",
            Limit::McpServersBytes => "mcp-servers-bytes",
            Limit::SourcesBytes => "sources-bytes",
            Limit::AssemblyBytes => "assembly-bytes",
            Limit::ManifestBytes => "manifest-bytes",
            Limit::ContextFileBytes => "context-file-bytes",
            Limit::TenantBytes => "tenant-bytes",
            Limit::ContentBytes => "content-bytes",
            Limit::McpPages => "mcp-pages",
            Limit::McpTools => "mcp-tools",
            Limit::McpBytes => "mcp-bytes",
            Limit::SimTurns => "sim-turns",
            Limit::SimSends => "sim-sends",
            Limit::SimSendsBytes => "sim-sends-bytes",
            Limit::CiteLinkBytes => "cite-link-bytes",
            Limit::CiteRuns => "cite-runs",
            Limit::TemplateMemory => "template-memory",
        }
    }

    /// The limit named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Limit> {
        Limit::ALL.into_iter().find(|limit| limit.name() == name)
    }

    /// What the limit counts.
    pub fn unit(self) -> LimitUnit {
        match self {
            Limit::McpPages
            | Limit::McpTools
            | Limit::SimTurns
            | Limit::SimSends
            | Limit::CiteRuns
            | Limit::ConversationMessages => LimitUnit::Count,
            _ => LimitUnit::Bytes,
        }
    }

    /// The value used unless the application sets another.
    pub fn default_value(self) -> u64 {
        match self {
            Limit::SpecBytes => promptstack_core::spec::MAX_SPEC_BYTES as u64,
            Limit::SendBytes => promptstack_core::context::MAX_SEND_BYTES as u64,
            Limit::ConversationBytes => promptstack_core::provider::MAX_CONVERSATION_BYTES as u64,
            Limit::ConversationMessages => {
                promptstack_core::provider::MAX_CONVERSATION_MESSAGES as u64
            }
            Limit::TemplateMemory => promptstack_core::Agent::DEFAULT_TEMPLATE_MEMORY,
            Limit::RulesBytes | Limit::McpServersBytes | Limit::ManifestBytes => MIB,
            Limit::ContextFileBytes | Limit::TenantBytes => MIB,
            Limit::SourcesBytes => 16 * MIB,
            Limit::AssemblyBytes | Limit::ContentBytes => 64 * MIB,
            Limit::McpPages => 100,
            Limit::McpTools => 1000,
            Limit::McpBytes => 8 * MIB,
            Limit::SimTurns | Limit::SimSends => 1000,
            Limit::SimSendsBytes => 64 * MIB,
            Limit::CiteLinkBytes => promptstack_core::stream::DEFAULT_MAX_LINK_BYTES,
            Limit::CiteRuns => promptstack_core::stream::DEFAULT_MAX_CITATION_RUNS as u64,
        }
    }

    /// The most the limit may be raised to. The spec, send and conversation caps cannot exceed
    /// the engine's own (its parsers refuse larger inputs whatever the reader allows).
    pub fn ceiling(self) -> u64 {
        match self {
            Limit::SpecBytes
            | Limit::SendBytes
            | Limit::ConversationBytes
            | Limit::ConversationMessages => self.default_value(),
            Limit::McpPages => 100_000,
            Limit::McpTools => 1_000_000,
            Limit::SimTurns | Limit::SimSends => 100_000,
            Limit::CiteRuns => 100_000_000,
            _ => 4 * GIB,
        }
    }

    /// What the limit bounds, in a few words.
    pub fn describe(self) -> &'static str {
        match self {
            Limit::SpecBytes => "size of an agent spec",
            Limit::SendBytes => "size of a send context",
            Limit::ConversationBytes => "size of a conversation file (`--conversation`)",
            Limit::ConversationMessages => "messages in one conversation (`--conversation`)",
            Limit::RulesBytes => "size of a provider rules table (`--rules`)",
            Limit::McpServersBytes => "size of an MCP server list (`--mcp`)",
            Limit::SourcesBytes => "size of a sources snapshot (`cite --sources`)",
            Limit::AssemblyBytes => "size of a saved assembly (`diff --assemblies`)",
            Limit::ManifestBytes => "size of one capability manifest (`capabilities/<slug>.toml`)",
            Limit::ContextFileBytes => "part of one context file (AGENTS.md, CLAUDE.md) read",
            Limit::TenantBytes => "size of one tenant's instructions file",
            Limit::ContentBytes => "size of the content `fence` reads from stdin",
            Limit::McpPages => "pages of `tools/list` read from one MCP server",
            Limit::McpTools => "tools accepted from one MCP server",
            Limit::McpBytes => "bytes of tool definitions accepted from one MCP server",
            Limit::SimTurns => "user turns of one cache simulation (`cache-sim --turns`)",
            Limit::SimSends => "send contexts in `cache-sim --sends`",
            Limit::SimSendsBytes => {
                "bytes of all the send contexts in `cache-sim --sends` together"
            }
            Limit::CiteLinkBytes => "bytes of Markdown links `cite --mode links` writes",
            Limit::CiteRuns => "citation runs `cite --json` holds for its final map",
            Limit::TemplateMemory => {
                "memory the templates of one assembly may use: half for the data any one render \
                 creates (its fuel, an instruction costing 64 bytes, at most 5000000 \
                 instructions), half for the texts all its renders keep"
            }
        }
    }

    /// What happens when the limit is hit.
    pub fn on_hit(self) -> &'static str {
        match self {
            Limit::ContextFileBytes => {
                "the rest of the file is not read; the engine's context-file caps then cut it \
                 further and say so in the prompt"
            }
            Limit::TenantBytes => {
                "the read fails; the tenant gets no instructions for this send (fail open) and \
                 the reason is reported"
            }
            Limit::McpPages | Limit::McpTools | Limit::McpBytes => {
                "listing stops; the server is skipped for this send with a `list` failure naming \
                 the limit (the stable half does not change)"
            }
            Limit::SimTurns | Limit::SimSends | Limit::SimSendsBytes => {
                "the command is refused (exit 2) before simulating"
            }
            Limit::CiteLinkBytes | Limit::CiteRuns => {
                "output stops before the run that would pass it; the command fails (exit 2) \
                 naming the input byte"
            }
            Limit::ConversationMessages => {
                "the conversation is refused (exit 2) at the first message past the limit, \
                 located, before the rest is read"
            }
            Limit::TemplateMemory => {
                "the render fails before allocating (exit 1), naming the block; raising it \
                 raises the fuel too"
            }
            _ => "the input is refused (exit 2) after reading at most the limit plus one byte",
        }
    }

    /// `value` written for people: `4 MiB`, `64 KiB`, `1000`.
    pub fn format_value(self, value: u64) -> String {
        match self.unit() {
            LimitUnit::Bytes if value >= GIB && value.is_multiple_of(GIB) => {
                format!("{} GiB", value / GIB)
            }
            LimitUnit::Bytes if value >= MIB && value.is_multiple_of(MIB) => {
                format!("{} MiB", value / MIB)
            }
            LimitUnit::Bytes if value >= KIB && value.is_multiple_of(KIB) => {
                format!("{} KiB", value / KIB)
            }
            LimitUnit::Bytes => format!("{value} bytes"),
            LimitUnit::Count => value.to_string(),
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a limit could not be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// The setting is not `NAME=VALUE`, names no limit, or its value is not a number.
    #[error("{0}")]
    Invalid(String),
    /// The value is zero or above the limit's ceiling.
    #[error("`{limit}` must be between 1 and {}, got {}", limit.format_value(limit.ceiling()), limit.format_value(*value))]
    OutOfRange {
        /// The limit.
        limit: Limit,
        /// The value asked for.
        value: u64,
    },
}

/// One value per [`Limit`]; [`Limits::default`] holds every default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    values: [u64; Limit::ALL.len()],
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            values: Limit::ALL.map(Limit::default_value),
        }
    }
}

impl Limits {
    /// The bounds of a conversation read as input: [`Limit::ConversationBytes`] and
    /// [`Limit::ConversationMessages`].
    pub fn conversation(&self) -> promptstack_core::provider::ConversationLimits {
        promptstack_core::provider::ConversationLimits::new()
            .max_bytes(usize::try_from(self.get(Limit::ConversationBytes)).unwrap_or(usize::MAX))
            .max_messages(
                usize::try_from(self.get(Limit::ConversationMessages)).unwrap_or(usize::MAX),
            )
    }

    /// A citation stream's configuration in `mode`, bounded by [`Limit::CiteLinkBytes`] and
    /// [`Limit::CiteRuns`]. A front end that takes the runs as they come lifts the second bound
    /// with `with_max_citation_runs(usize::MAX)`.
    pub fn cite(
        &self,
        mode: promptstack_core::stream::OutputMode,
    ) -> promptstack_core::stream::StreamConfig {
        promptstack_core::stream::StreamConfig::new(mode)
            .with_max_link_bytes(self.get(Limit::CiteLinkBytes))
            .with_max_citation_runs(
                usize::try_from(self.get(Limit::CiteRuns)).unwrap_or(usize::MAX),
            )
    }

    /// The value of `limit`.
    pub fn get(&self, limit: Limit) -> u64 {
        self.values[limit as usize]
    }

    /// Sets `limit` to `value`.
    ///
    /// # Errors
    ///
    /// [`LimitError::OutOfRange`] for zero or a value above [`Limit::ceiling`].
    pub fn set(&mut self, limit: Limit, value: u64) -> Result<(), LimitError> {
        if value == 0 || value > limit.ceiling() {
            return Err(LimitError::OutOfRange { limit, value });
        }
        self.values[limit as usize] = value;
        Ok(())
    }

    /// Applies a setting written `NAME=VALUE` (`content-bytes=256MiB`, `sim-turns=5000`).
    ///
    /// # Errors
    ///
    /// [`LimitError::Invalid`] for a malformed setting or an unknown name, and
    /// [`LimitError::OutOfRange`] as [`Limits::set`].
    pub fn apply(&mut self, setting: &str) -> Result<(), LimitError> {
        let quoted = promptstack_core::diagnostic::quote(setting);
        let Some((name, value)) = setting.split_once('=') else {
            return Err(LimitError::Invalid(format!(
                "`{quoted}` is not NAME=VALUE (e.g. content-bytes=256MiB)"
            )));
        };
        let Some(limit) = Limit::from_name(name.trim()) else {
            let names: Vec<&str> = Limit::ALL.iter().map(|l| l.name()).collect();
            return Err(LimitError::Invalid(format!(
                "`{}` is not a limit; the limits are {}",
                promptstack_core::diagnostic::quote(name),
                names.join(", ")
            )));
        };
        let value = parse_value(value.trim(), limit.unit()).ok_or_else(|| {
            LimitError::Invalid(format!(
                "`{quoted}`: the value must be a whole number{}",
                match limit.unit() {
                    LimitUnit::Bytes => ", optionally with KiB, MiB or GiB",
                    LimitUnit::Count => "",
                }
            ))
        })?;
        self.set(limit, value)
    }

    /// The size cap of an input kind.
    pub fn max_bytes(&self, kind: InputKind) -> u64 {
        self.get(kind.limit())
    }
}

fn parse_value(text: &str, unit: LimitUnit) -> Option<u64> {
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = text[digits.len()..].to_ascii_lowercase();
    let scale = match (unit, suffix.as_str()) {
        (_, "") => 1,
        (LimitUnit::Bytes, "kib") => KIB,
        (LimitUnit::Bytes, "mib") => MIB,
        (LimitUnit::Bytes, "gib") => GIB,
        _ => return None,
    };
    let digits = digits.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// The most seconds an MCP server may be given to start, or to list its tools (a longer timeout
/// is a mistake, and beyond it durations stop being representable).
pub const MCP_TIMEOUT_MAX_SECONDS: u64 = 3600;

/// The default time an MCP server may take to start and complete the handshake, and again to
/// list its tools.
pub const MCP_TIMEOUT_DEFAULT: Duration = Duration::from_secs(10);

/// The largest gap between two simulated turns (`cache-sim --gap-seconds`): 30 days, far beyond
/// every provider's cache lifetime.
pub const SIM_GAP_MAX_SECONDS: u32 = 30 * 24 * 3600;

/// The most timed iterations `bench` runs per figure.
pub const BENCH_ITERATIONS_MAX: u32 = 10_000_000;

/// What an input is, which decides its size cap and how errors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputKind {
    /// An agent spec.
    Spec,
    /// A send context.
    Send,
    /// A conversation.
    Conversation,
    /// A provider rules table.
    Rules,
    /// An MCP server list.
    McpServers,
    /// A sources snapshot.
    Sources,
    /// A saved assembly.
    Assembly,
    /// A capability manifest.
    Manifest,
    /// A context file (AGENTS.md, CLAUDE.md): read up to its cap, never refused for its size.
    ContextFile,
    /// A tenant's instructions.
    Tenant,
    /// Untrusted content to fence.
    Content,
}

impl InputKind {
    /// The limit on its size.
    pub fn limit(self) -> Limit {
        match self {
            InputKind::Spec => Limit::SpecBytes,
            InputKind::Send => Limit::SendBytes,
            InputKind::Conversation => Limit::ConversationBytes,
            InputKind::Rules => Limit::RulesBytes,
            InputKind::McpServers => Limit::McpServersBytes,
            InputKind::Sources => Limit::SourcesBytes,
            InputKind::Assembly => Limit::AssemblyBytes,
            InputKind::Manifest => Limit::ManifestBytes,
            InputKind::ContextFile => Limit::ContextFileBytes,
            InputKind::Tenant => Limit::TenantBytes,
            InputKind::Content => Limit::ContentBytes,
        }
    }

    /// How messages name it: `spec`, `send context`, …
    pub fn noun(self) -> &'static str {
        match self {
            InputKind::Spec => "spec",
            InputKind::Send => "send context",
            InputKind::Conversation => "conversation",
            InputKind::Rules => "rules table",
            InputKind::McpServers => "MCP server list",
            InputKind::Sources => "sources file",
            InputKind::Assembly => "assembly",
            InputKind::Manifest => "capability manifest",
            InputKind::ContextFile => "context file",
            InputKind::Tenant => "tenant instructions",
            InputKind::Content => "content",
        }
    }

    /// Whether an input over its cap is cut to the cap instead of refused.
    fn truncates(self) -> bool {
        self == InputKind::ContextFile
    }
}

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The file does not exist or cannot be opened or read (the reason is the error's source).
    #[error("cannot read {} {}", kind.noun(), shown(path))]
    Io {
        /// What was read.
        kind: InputKind,
        /// The path given.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The path is a FIFO, a device, a socket or a directory.
    #[error("cannot read {} {}: it is {found}, not a regular file", kind.noun(), shown(path))]
    NotAFile {
        /// What was read.
        kind: InputKind,
        /// The path given.
        path: PathBuf,
        /// What it is (`a FIFO`, `a directory`, …).
        found: &'static str,
    },
    /// The input is larger than its cap.
    #[error(
        "{} {} is larger than {} (the `{}` limit)",
        kind.noun(),
        shown(path),
        kind.limit().format_value(*max),
        kind.limit()
    )]
    TooLarge {
        /// What was read.
        kind: InputKind,
        /// The path given (`-` for stdin).
        path: PathBuf,
        /// The cap.
        max: u64,
    },
    /// The path resolves (through symlinks) to a file outside the allowed root.
    #[error(
        "{} {} resolves to {}, outside {}; symlinks may not leave it",
        kind.noun(),
        shown(path),
        shown(target),
        shown(root)
    )]
    Escapes {
        /// What was read.
        kind: InputKind,
        /// The path given.
        path: PathBuf,
        /// Where it resolves to.
        target: PathBuf,
        /// The root it must stay in.
        root: PathBuf,
    },
}

impl InputError {
    /// The kind of input that could not be read.
    pub fn kind(&self) -> InputKind {
        match self {
            InputError::Io { kind, .. }
            | InputError::NotAFile { kind, .. }
            | InputError::TooLarge { kind, .. }
            | InputError::Escapes { kind, .. } => *kind,
        }
    }

    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// A path as messages show it: escaped for a terminal; `-` is stdin.
fn shown(path: &Path) -> String {
    if path == Path::new("-") {
        return "on stdin".to_owned();
    }
    terminal_safe(&path.display().to_string()).into_owned()
}

/// Reads a regular file of `kind`, bounded by its cap in `limits` (see the module docs).
///
/// # Errors
///
/// [`InputError::NotAFile`] for anything but a regular file, [`InputError::TooLarge`] beyond the
/// cap (except for context files, which are cut to it), [`InputError::Io`] otherwise.
pub fn read(path: &Path, kind: InputKind, limits: &Limits) -> Result<Vec<u8>, InputError> {
    let file = open_regular(path, path, kind)?;
    let capacity = size_hint(&file, limits.max_bytes(kind));
    read_bounded(file, capacity, path, kind, limits)
}

/// The capacity to reserve for a file: its size, but never more than the cap allows.
fn size_hint(file: &File, max: u64) -> usize {
    let len = file.metadata().map_or(0, |m| m.len());
    usize::try_from(len.min(max).saturating_add(1)).unwrap_or(0)
}

/// Reads a regular file of `kind` that must lie, once every symlink is resolved, inside `root`.
///
/// # Errors
///
/// As [`read`], and [`InputError::Escapes`] when the file's real path is outside `root`.
pub fn read_within(
    path: &Path,
    root: &Path,
    kind: InputKind,
    limits: &Limits,
) -> Result<Vec<u8>, InputError> {
    let real = resolve_within(path, root, kind)?;
    let file = open_regular(&real, path, kind)?;
    let capacity = size_hint(&file, limits.max_bytes(kind));
    read_bounded(file, capacity, path, kind, limits)
}

/// The real path of `path`, which must lie inside `root` once both are resolved.
///
/// # Errors
///
/// [`InputError::Io`] when either cannot be resolved (a missing file included), and
/// [`InputError::Escapes`] when the real path is outside the real root.
pub fn resolve_within(path: &Path, root: &Path, kind: InputKind) -> Result<PathBuf, InputError> {
    let io = |source| InputError::Io {
        kind,
        path: path.to_owned(),
        source,
    };
    let root = std::fs::canonicalize(root).map_err(io)?;
    let real = std::fs::canonicalize(path).map_err(io)?;
    if !real.starts_with(&root) {
        return Err(InputError::Escapes {
            kind,
            path: path.to_owned(),
            target: real,
            root,
        });
    }
    Ok(real)
}

/// Reads stdin as input of `kind`, bounded by its cap: at most the cap plus one byte is read.
///
/// # Errors
///
/// [`InputError::TooLarge`] beyond the cap, [`InputError::Io`] when stdin cannot be read.
pub fn read_stdin(kind: InputKind, limits: &Limits) -> Result<Vec<u8>, InputError> {
    read_bounded(std::io::stdin().lock(), 0, Path::new("-"), kind, limits)
}

/// What a file type is, for the message refusing it; `None` for a regular file.
fn special(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return Some("a FIFO (named pipe)");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// Opens `real` for reading if it is a regular file, without blocking on anything else.
///
/// The type is checked on the path first, the file is opened non-blocking (opening a FIFO
/// otherwise waits for a writer, forever), and the type is checked again on the opened handle,
/// which is what is read. Errors name `shown_as`, the path the caller gave.
fn open_regular(real: &Path, shown_as: &Path, kind: InputKind) -> Result<File, InputError> {
    let io = |source| InputError::Io {
        kind,
        path: shown_as.to_owned(),
        source,
    };
    let refuse = |found| InputError::NotAFile {
        kind,
        path: shown_as.to_owned(),
        found,
    };
    let metadata = std::fs::metadata(real).map_err(io)?;
    if let Some(found) = special(metadata.file_type()) {
        return Err(refuse(found));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    }
    let file = options.open(real).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if let Some(found) = special(metadata.file_type()) {
        return Err(refuse(found));
    }
    Ok(file)
}

/// Reads at most the cap plus one byte; beyond the cap the input is refused (or, for context
/// files, cut to the cap).
fn read_bounded(
    reader: impl Read,
    capacity: usize,
    path: &Path,
    kind: InputKind,
    limits: &Limits,
) -> Result<Vec<u8>, InputError> {
    let max = limits.max_bytes(kind);
    let mut bytes = Vec::with_capacity(capacity);
    reader
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|source| InputError::Io {
            kind,
            path: path.to_owned(),
            source,
        })?;
    if bytes.len() as u64 > max {
        if kind.truncates() {
            bytes.truncate(max as usize);
        } else {
            return Err(InputError::TooLarge {
                kind,
                path: path.to_owned(),
                max,
            });
        }
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_defaults_fit_their_ceilings() {
        for limit in Limit::ALL {
            assert_eq!(Limit::from_name(limit.name()), Some(limit));
            assert!(limit.default_value() <= limit.ceiling(), "{limit}");
            assert_eq!(Limits::default().get(limit), limit.default_value());
        }
    }

    #[test]
    fn settings_are_parsed_and_checked() {
        let mut limits = Limits::default();
        limits.apply("content-bytes=256MiB").unwrap();
        assert_eq!(limits.max_bytes(InputKind::Content), 256 * MIB);
        limits.apply("sim-turns = 5000").unwrap();
        assert_eq!(limits.get(Limit::SimTurns), 5000);
        for bad in [
            "content-bytes",
            "nope=1",
            "sim-turns=1KiB",
            "sim-turns=-1",
            "sim-turns=0",
            "sim-turns=1e9",
            "spec-bytes=5MiB",
            "content-bytes=99999999999999999999GiB",
        ] {
            assert!(limits.apply(bad).is_err(), "{bad}");
        }
        assert_eq!(
            limits.apply("sim-turns=1000000").unwrap_err().to_string(),
            "`sim-turns` must be between 1 and 100000, got 1000000"
        );
    }

    #[test]
    fn values_are_formatted_in_their_unit() {
        assert_eq!(Limit::SpecBytes.format_value(4 * MIB), "4 MiB");
        assert_eq!(Limit::SpecBytes.format_value(1536), "1536 bytes");
        assert_eq!(Limit::SpecBytes.format_value(2 * KIB), "2 KiB");
        assert_eq!(Limit::McpPages.format_value(100), "100");
    }
}
