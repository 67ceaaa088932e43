//! Reusable prompt layers for agent families: the pieces every browser or coding agent needs,
//! done once and correctly.
//!
//! - [`escape`]: XML-ish escaping of `& < > " '` (and its inverse, for tests and tools).
//! - [`guidelines`]: trim (ECMAScript whitespace), drop empties, exact dedupe with the first
//!   position winning.
//! - [`crate::sites`] (a module of its own, since the send context checks skill patterns with it):
//!   site patterns matched against the tab at submit time and the tabs the user referenced.
//! - [`files`]: context files (AGENTS.md, CLAUDE.md) with relative `/` paths and per-file and
//!   total size caps that leave a visible truncation note.
//! - [`compact`]: harness state serialised compactly (bounded lists with `+N more`, long strings
//!   cut with an ellipsis).
//!
//! Each layer is a pure function with its own tests, and is also a template filter registered in
//! every agent's environment, so a spec uses it as
//! `{{ skills | unique_names }}`, `{{ text | escape_xml }}`, `{% for g in list | guidelines %}`.

// The layers are also the templates' filters, and the engine-free evaluators apply them as the
// filters do, so they live with the templates (`promptstack-template`); this module is their
// public path.
pub use promptstack_template::layers::{compact, escape, files, guidelines};
