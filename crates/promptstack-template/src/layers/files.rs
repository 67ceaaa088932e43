//! Context files (the AGENTS.md / CLAUDE.md chain) as the model should see them.
//!
//! The core receives the files as data ([`ContextFile`]: path and content; the CLI or the application reads them
//! from disk). [`prepare`] turns them into what a template places inside a container:
//!
//! - the **path** relative to a base directory (usually the working directory), lexically and with
//!   `/` separators (`C:\work\repo\AGENTS.md` under base `C:\work\repo\src` is `../AGENTS.md`); a
//!   path on another root stays absolute, with `/`;
//! - the **content** cut to a per-file cap and to what remains of a total cap, on a character
//!   boundary, with a visible note saying how much was left out. A file that arrives after the
//!   total cap is spent keeps its entry, with empty content and a note, so the model knows it exists.
//!
//! Escaping is left to the template (`escape_xml` on the path attribute and the content), which
//! decides the container's syntax.

use serde::Serialize;

use crate::context::ContextFile;

/// Size caps, in bytes of UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The most shown of one file. Default: 16 KiB.
    pub max_file_bytes: usize,
    /// The most shown of all files together. Default: 48 KiB.
    pub max_total_bytes: usize,
}

impl Default for Caps {
    fn default() -> Self {
        Self {
            max_file_bytes: 16 * 1024,
            max_total_bytes: 48 * 1024,
        }
    }
}

/// A context file ready to render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShownFile {
    /// The path, relative to the base when it can be, with `/` separators.
    pub path: String,
    /// The content shown (possibly cut).
    pub content: String,
    /// Whether some of the content was left out.
    pub truncated: bool,
    /// The size of the whole file.
    pub bytes: usize,
    /// The size of what is shown.
    pub shown_bytes: usize,
    /// The truncation note to place after the content, when something was left out.
    pub note: Option<String>,
}

/// Prepares the files in order: relative paths, caps, notes.
pub fn prepare(files: &[ContextFile], base: Option<&str>, caps: Caps) -> Vec<ShownFile> {
    let mut remaining = caps.max_total_bytes;
    files
        .iter()
        .map(|file| {
            let bytes = file.content.len();
            let allowed = caps.max_file_bytes.min(remaining);
            let content = cut(&file.content, allowed);
            remaining -= content.len();
            let shown_bytes = content.len();
            let note = if shown_bytes == bytes {
                None
            } else if shown_bytes == 0 {
                Some(format!(
                    "[omitted: the context files reached their {}-byte limit; this file's {bytes} bytes are not shown]",
                    caps.max_total_bytes
                ))
            } else {
                Some(format!(
                    "[truncated: showing the first {shown_bytes} of {bytes} bytes]"
                ))
            };
            ShownFile {
                path: match base {
                    Some(base) => relative_to(&file.path, base),
                    None => posix_path(&file.path),
                },
                content: content.to_owned(),
                truncated: note.is_some(),
                bytes,
                shown_bytes,
                note,
            }
        })
        .collect()
}

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Every `\` replaced by `/`; nothing else changes.
pub fn posix_path(path: &str) -> String {
    path.replace('\\', "/")
}

/// `path` relative to the directory `base`, lexically, with `/` separators.
///
/// Both are read with either separator; `.` segments and empty segments are dropped and `..`
/// segments resolved lexically. When both are absolute on the same root (`/`, or the same drive
/// letter, compared case-insensitively) the result is relative (`AGENTS.md`, `../AGENTS.md`);
/// otherwise `path` is returned normalised but absolute. A relative `path` is returned normalised.
pub fn relative_to(path: &str, base: &str) -> String {
    let (path_root, path_parts) = split(path);
    let (base_root, base_parts) = split(base);
    let same_root = match (&path_root, &base_root) {
        (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
        _ => false,
    };
    if !same_root {
        return match path_root {
            Some(root) => format!("{root}{}", path_parts.join("/")),
            None => path_parts.join("/"),
        };
    }
    let common = path_parts
        .iter()
        .zip(&base_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut out: Vec<&str> = Vec::new();
    out.extend(std::iter::repeat_n("..", base_parts.len() - common));
    out.extend(path_parts[common..].iter().copied());
    if out.is_empty() {
        ".".to_owned()
    } else {
        out.join("/")
    }
}

/// The root (`/`, `C:/`, `//server/share/`) and the normalised segments of a path.
fn split(path: &str) -> (Option<String>, Vec<&str>) {
    let bytes = path.as_bytes();
    let (root, rest) = if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        (Some(format!("{}/", &path[..2])), &path[2..])
    } else if path.starts_with("\\\\") || path.starts_with("//") {
        (Some("//".to_owned()), &path[2..])
    } else if path.starts_with(['/', '\\']) {
        (Some("/".to_owned()), path)
    } else {
        (None, path)
    };
    let mut parts: Vec<&str> = Vec::new();
    for segment in rest.split(['/', '\\']) {
        match segment {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if root.is_none() {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    (root, parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_to("/home/dev/p/AGENTS.md", "/home/dev/p"),
            "AGENTS.md"
        );
        assert_eq!(
            relative_to("/home/dev/AGENTS.md", "/home/dev/p/src"),
            "../../AGENTS.md"
        );
        assert_eq!(
            relative_to("C:\\work\\AGENTS.md", "c:\\work\\repo"),
            "../AGENTS.md"
        );
        assert_eq!(
            relative_to("D:\\x\\AGENTS.md", "C:\\work"),
            "D:/x/AGENTS.md"
        );
        assert_eq!(relative_to("docs\\AGENTS.md", "/home"), "docs/AGENTS.md");
    }

    #[test]
    fn caps_leave_notes() {
        let files = vec![
            ContextFile {
                path: "/r/A.md".into(),
                content: "é".repeat(10),
            },
            ContextFile {
                path: "/r/B.md".into(),
                content: "b".repeat(10),
            },
        ];
        let shown = prepare(
            &files,
            Some("/r"),
            Caps {
                max_file_bytes: 5,
                max_total_bytes: 4,
            },
        );
        assert_eq!(shown[0].content, "éé");
        assert!(shown[0].note.as_deref().unwrap().contains("first 4 of 20"));
        assert_eq!(shown[1].content, "");
        assert!(shown[1].note.as_deref().unwrap().starts_with("[omitted"));
    }
}
