//! `fence` and `check_fence`: untrusted content in nonce markers it cannot forge.

use promptstack::command::{self, FenceKind, FenceRequest};
use promptstack::fence::{ContentKind, check};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::errors::Failure;

/// Untrusted content wrapped in a fresh nonce fence.
#[pyclass(frozen, module = "promptstack", get_all)]
pub struct Fenced {
    /// The fenced text: opening marker, defanged body, closing marker.
    text: String,
    /// The nonce in both markers (fresh from the operating system).
    nonce: String,
    /// The content kind: `page`, `selection`, `file`, `mcp-resource` or `tool-result`.
    kind: &'static str,
    /// How many marker-shaped strings or control tokens in the content were defanged.
    defanged: usize,
    /// When the body was cut to `max_bytes`: `(kept_bytes, total_bytes)`.
    truncated: Option<(usize, usize)>,
}

#[pymethods]
impl Fenced {
    fn __str__(&self) -> &str {
        &self.text
    }

    fn __repr__(&self) -> String {
        format!(
            "<promptstack.Fenced {} nonce={} {} bytes>",
            self.kind,
            self.nonce,
            self.text.len()
        )
    }
}

/// Wraps untrusted `content` in a nonce fence, as `promptstack fence` does (without the
/// trailing newline the command prints).
///
/// `kind` is `page`, `selection`, `file`, `mcp-resource` or `tool-result` (or a marker name such
/// as `web_content`); `origin` a URL (page, selection, tool-result; reduced to
/// `scheme://host[:port]`), a path (file) or `mcp://SERVER/URI` (mcp-resource), optional for
/// tool results only; `tool` the registry name of the tool that produced the content;
/// `max_bytes` cuts the body (truncation note included) before wrapping.
#[pyfunction]
#[pyo3(signature = (content, kind, origin = None, tool = None, max_bytes = None))]
pub fn fence(
    py: Python<'_>,
    content: &str,
    kind: &str,
    origin: Option<&str>,
    tool: Option<&str>,
    max_bytes: Option<usize>,
) -> PyResult<Fenced> {
    let content = content.to_owned();
    let kind = kind.to_owned();
    let origin = origin.map(str::to_owned);
    let tool = tool.map(str::to_owned);
    py.detach(move || -> Result<Fenced, Failure> {
        let kind = FenceKind::parse(&kind)?;
        let request = FenceRequest::wrap(content, kind, origin, tool, max_bytes);
        // Wrapping answers with the text, the nonce and the count of defanged markers.
        let fenced = command::fence(&request)?;
        Ok(Fenced {
            nonce: fenced
                .nonce
                .map(|nonce| nonce.to_string())
                .unwrap_or_default(),
            kind: ContentKind::from(kind).short_name(),
            defanged: fenced.defanged.unwrap_or_default(),
            truncated: fenced.truncated.map(|[kept, total]| (kept, total)),
            text: fenced.text.unwrap_or_default(),
        })
    })
    .map_err(|f| f.into_py(py))
}

/// The result of checking that a text is exactly one valid fence.
#[pyclass(frozen, module = "promptstack", get_all)]
pub struct FenceCheck {
    /// Whether the text is exactly one valid fence.
    valid: bool,
    /// The content kind (`None` when no fence was recognised).
    kind: Option<&'static str>,
    /// The nonce of the markers.
    nonce: Option<String>,
    /// The origin attribute, unescaped.
    origin: Option<String>,
    /// The tool attribute, unescaped.
    tool: Option<String>,
    /// The body between the markers.
    body: Option<String>,
    /// Every problem: dicts with `kind`, `offset` (a UTF-8 byte offset, or `None`) and
    /// `message`.
    problems: Py<PyList>,
}

#[pymethods]
impl FenceCheck {
    fn __bool__(&self) -> bool {
        self.valid
    }

    fn __repr__(&self) -> String {
        format!(
            "<promptstack.FenceCheck {}>",
            if self.valid { "valid" } else { "invalid" }
        )
    }
}

/// Checks that `text` is exactly one valid fence, as `promptstack fence --check` does.
///
/// It runs the fence's check itself rather than the `fence` command's, whose answer is the
/// command line's (problems as text, the fence only when valid): this one keeps each problem's
/// kind and offset, and the fence found even in an invalid text.
#[pyfunction]
pub fn check_fence(py: Python<'_>, text: &str) -> PyResult<FenceCheck> {
    let owned = text.to_owned();
    let report = py.detach(move || check(&owned));
    let problems = PyList::empty(py);
    for problem in &report.problems {
        let item = PyDict::new(py);
        item.set_item("kind", problem.kind.as_str())?;
        item.set_item("offset", problem.offset)?;
        item.set_item("message", &problem.message)?;
        problems.append(item)?;
    }
    let info = report.fence.as_ref();
    Ok(FenceCheck {
        valid: report.is_valid(),
        kind: info.map(|i| i.kind.short_name()),
        nonce: info.map(|i| i.nonce.to_string()),
        origin: info.and_then(|i| i.origin.clone()),
        tool: info.and_then(|i| i.tool.clone()),
        body: info.and_then(|i| text.get(i.body.clone()).map(str::to_owned)),
        problems: problems.unbind(),
    })
}
