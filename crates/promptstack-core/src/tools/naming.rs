//! Tool names every provider accepts, and the names MCP tools get once namespaced by their server.
//!
//! Providers accept tool names matching `^[a-zA-Z0-9_-]{1,64}$`. Local tools must already have such
//! a name ([`validate_tool_name`]); MCP tools get one from [`namespace_mcp_tools`], which is:
//!
//! - **safe**: every produced name matches the charset and is at most 64 characters;
//! - **injective**: two different `(server, tool)` pairs never share a name, and no name equals an
//!   already-taken (local) name;
//! - **order-independent**: the result depends only on the *set* of pairs and the taken names, never
//!   on the order in which servers were configured or discovered, or tools were listed;
//! - **reversible**: the result maps every name back to its server and original tool name.
//!
//! The plain name is `<server>_<tool>`, each part sanitised (every character outside the charset
//! becomes `_`). When the plain name is longer than 64 characters, or is shared by several pairs,
//! or is taken, **every** pair concerned gets a suffix derived from a stable hash of its original
//! server and tool names (`_` and 8 hex digits, then 16 if that still collides). No pair "wins" the
//! plain name, because which pair came first is exactly the order dependence this avoids.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The longest tool name providers accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// What is wrong with a tool name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolNameErrorKind {
    /// The name is empty.
    Empty,
    /// The name has more than [`MAX_TOOL_NAME_LEN`] characters.
    TooLong {
        /// Its length in characters.
        len: usize,
    },
    /// The name holds a character outside `[a-zA-Z0-9_-]`.
    InvalidCharacter {
        /// The first such character.
        character: char,
        /// Its byte offset in the name.
        offset: usize,
    },
}

/// A tool name that providers would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolNameError {
    name: String,
    kind: ToolNameErrorKind,
}

impl ToolNameError {
    /// What is wrong.
    pub fn kind(&self) -> &ToolNameErrorKind {
        &self.kind
    }

    /// The refused name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for ToolNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ToolNameErrorKind::Empty => f.write_str("tool name is empty"),
            ToolNameErrorKind::TooLong { len } => write!(
                f,
                "tool name `{}` has {len} characters, providers accept at most {MAX_TOOL_NAME_LEN}",
                self.name
            ),
            ToolNameErrorKind::InvalidCharacter { character, offset } => write!(
                f,
                "tool name `{}` holds {character:?} at byte {offset}; only ASCII letters, digits, `_` and `-` are accepted",
                self.name
            ),
        }
    }
}

impl std::error::Error for ToolNameError {}

/// Whether a byte may appear in a provider tool name.
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// Checks that `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
///
/// # Errors
///
/// A [`ToolNameError`] naming the first problem: empty, too long, or the first invalid character.
pub fn validate_tool_name(name: &str) -> Result<(), ToolNameError> {
    let error = |kind| {
        Err(ToolNameError {
            name: name.to_owned(),
            kind,
        })
    };
    if name.is_empty() {
        return error(ToolNameErrorKind::Empty);
    }
    if let Some((offset, character)) = name
        .char_indices()
        .find(|&(_, c)| !c.is_ascii() || !is_name_byte(c as u8))
    {
        return error(ToolNameErrorKind::InvalidCharacter { character, offset });
    }
    if name.len() > MAX_TOOL_NAME_LEN {
        return error(ToolNameErrorKind::TooLong { len: name.len() });
    }
    Ok(())
}

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= MAX_TOOL_NAME_LEN && name.bytes().all(is_name_byte)
}

/// Rewrites every character outside `[a-zA-Z0-9_-]` to `_` (one `_` per character).
///
/// The result may be empty (for an empty input) and is not length-limited.
pub fn sanitize_name_part(part: &str) -> String {
    part.chars()
        .map(|c| {
            if c.is_ascii() && is_name_byte(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Where a namespaced MCP tool comes from: its server and its name on that server.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct McpToolOrigin {
    /// The server's configured name.
    pub server: String,
    /// The tool's name as the server lists it.
    pub tool: String,
}

/// The names given to a set of MCP tools, both ways: name → origin and origin → name.
///
/// Stored as one list sorted by name plus an index sorted by origin, so both lookups are binary
/// searches and building it costs three allocations per tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespacedTools {
    /// `(name, origin)`, sorted by name.
    entries: Vec<(String, McpToolOrigin)>,
    /// Positions in `entries`, sorted by origin.
    by_origin: Vec<usize>,
}

impl NamespacedTools {
    /// The provider-facing name of `tool` on `server`, if it was namespaced here.
    pub fn name_of(&self, server: &str, tool: &str) -> Option<&str> {
        let found = self.by_origin.binary_search_by(|&i| {
            let origin = &self.entries[i].1;
            (origin.server.as_str(), origin.tool.as_str()).cmp(&(server, tool))
        });
        found
            .ok()
            .map(|at| self.entries[self.by_origin[at]].0.as_str())
    }

    /// The server and original tool name behind a provider-facing name.
    pub fn origin(&self, name: &str) -> Option<&McpToolOrigin> {
        let at = self
            .entries
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()?;
        Some(&self.entries[at].1)
    }

    /// Every name with its origin, sorted by name (the canonical order).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &McpToolOrigin)> {
        self.entries
            .iter()
            .map(|(name, origin)| (name.as_str(), origin))
    }

    /// The reverse map name → origin, for history and UI (e.g. on an assistant message).
    pub fn reverse_map(&self) -> BTreeMap<String, McpToolOrigin> {
        self.entries.iter().cloned().collect()
    }

    /// How many tools were named.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool was named.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Gives every `(server, tool)` pair a provider-safe, unique, order-independent name.
///
/// `taken` holds names already in use (the local tools); no produced name equals one of them.
/// Duplicate pairs are named once. See the [module docs](self) for the scheme.
///
/// # Example
///
/// ```
/// use promptstack_core::tools::naming::namespace_mcp_tools;
///
/// let names = namespace_mcp_tools([("git.hub", "search"), ("docs", "search")], ["docs_search"]);
/// assert_eq!(names.name_of("git.hub", "search"), Some("git_hub_search"));
/// // `docs_search` is a local tool, so the MCP tool gets a hash suffix instead.
/// let docs = names.name_of("docs", "search").unwrap();
/// assert!(docs.starts_with("docs_search_") && docs.len() == "docs_search_".len() + 8);
/// assert_eq!(names.origin(docs).unwrap().server, "docs");
/// ```
pub fn namespace_mcp_tools<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    taken: impl IntoIterator<Item = &'a str>,
) -> NamespacedTools {
    let taken: HashSet<&str> = taken.into_iter().collect();
    // Sorting (and de-duplicating) first is what makes every later step order-independent.
    let mut pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
    pairs.sort_unstable();
    pairs.dedup();
    let count = pairs.len();
    let mut levels = vec![0usize; count];
    let mut names: Vec<String> = pairs
        .iter()
        .enumerate()
        .map(|(i, &(server, tool))| candidate(server, tool, 0, i, count))
        .collect();

    // Bump every pair whose candidate is shared or taken, until all are unique. Candidates from
    // level 3 on end in `_<code>` with a code unique per pair, so they never collide with each
    // other, and the loop ends (see `candidate`).
    loop {
        let clashing: Vec<usize> = {
            let mut uses: HashMap<&str, u32> = HashMap::with_capacity(count);
            for name in &names {
                *uses.entry(name.as_str()).or_default() += 1;
            }
            (0..count)
                .filter(|&i| uses[names[i].as_str()] > 1 || taken.contains(names[i].as_str()))
                .collect()
        };
        if clashing.is_empty() {
            break;
        }
        for i in clashing {
            levels[i] += 1;
            let (server, tool) = pairs[i];
            names[i] = candidate(server, tool, levels[i], i, count);
        }
    }

    let mut entries: Vec<(String, McpToolOrigin)> = names
        .into_iter()
        .zip(&pairs)
        .map(|(name, &(server, tool))| {
            let origin = McpToolOrigin {
                server: server.to_owned(),
                tool: tool.to_owned(),
            };
            (name, origin)
        })
        .collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut by_origin: Vec<usize> = (0..entries.len()).collect();
    by_origin.sort_unstable_by(|&a, &b| entries[a].1.cmp(&entries[b].1));
    NamespacedTools { entries, by_origin }
}

/// A stable 64-bit hash of an original `(server, tool)` pair.
///
/// XXH3 has a fixed specification, so names stay the same across releases and platforms. The
/// `0xFF` separator never occurs in UTF-8, so `("ab", "c")` and `("a", "bc")` hash differently.
fn pair_hash(server: &str, tool: &str) -> u64 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(server.as_bytes());
    hasher.update(&[0xFF]);
    hasher.update(tool.as_bytes());
    hasher.digest()
}

/// The name a pair would get at a given level of disambiguation.
///
/// - level 0: the plain sanitised `<server>_<tool>` (or level 1 when it is too long);
/// - level 1: the plain name cut to fit, `_`, 8 hex digits of the hash;
/// - level 2: the same with all 16 hex digits;
/// - level 3 and up: 16 hex digits, `_`, then a decimal code `index + (level - 3) × count`,
///   unique per pair at any level, so two such names can never be equal.
fn candidate(server: &str, tool: &str, level: usize, index: usize, count: usize) -> String {
    let mut name = String::with_capacity(server.len() + tool.len() + 1);
    push_sanitized(&mut name, server);
    name.push('_');
    push_sanitized(&mut name, tool);
    if level == 0 && name.len() <= MAX_TOOL_NAME_LEN {
        return name;
    }
    let hash = pair_hash(server, tool);
    let suffix = match level {
        0 | 1 => format!("_{:08x}", hash >> 32),
        2 => format!("_{hash:016x}"),
        _ => format!("_{hash:016x}_{}", index + (level - 3) * count),
    };
    // Sanitised names are ASCII, so any byte offset is a character boundary.
    name.truncate(MAX_TOOL_NAME_LEN - suffix.len());
    name.push_str(&suffix);
    name
}

fn push_sanitized(out: &mut String, part: &str) {
    out.extend(part.chars().map(|c| {
        if c.is_ascii() && is_name_byte(c as u8) {
            c
        } else {
            '_'
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_are_cut_and_suffixed() {
        let server = "s".repeat(40);
        let tool = "t".repeat(40);
        let names = namespace_mcp_tools([(server.as_str(), tool.as_str())], []);
        let name = names.name_of(&server, &tool).unwrap();
        assert_eq!(name.len(), MAX_TOOL_NAME_LEN);
        assert!(is_valid_tool_name(name));
    }

    #[test]
    fn level_three_names_are_distinct() {
        let a = candidate("x", "y", 3, 0, 2);
        let b = candidate("x", "y", 3, 1, 2);
        let c = candidate("x", "y", 4, 0, 2);
        assert!(a != b && a != c && b != c);
    }
}
