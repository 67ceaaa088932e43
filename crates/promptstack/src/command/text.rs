//! The commands over a text rather than a send: `fence` wraps untrusted text in a nonce fence or
//! checks a fenced one, and `cite` makes the processor a model's streamed text goes through.

use promptstack_core::compose::UnknownName;
use promptstack_core::fence::{
    ContentKind, Fence, FenceError, FenceErrorKind, FenceInfo, MaxBytes, Nonce, Provenance,
};
use promptstack_core::stream::{OutputMode, Processor, SourceSnapshot, WidgetSet};
use serde::{Deserialize, Serialize};

use super::Error;
use crate::limits::Limits;
use crate::nonce::OsNonces;

/// What kind of content a fence holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "kebab-case")]
pub enum FenceKind {
    /// A web page.
    Page,
    /// A selection of a page.
    Selection,
    /// A file.
    File,
    /// An MCP resource.
    McpResource,
    /// A tool's result.
    ToolResult,
}

impl FenceKind {
    /// Every kind, in the order the fence declares them.
    pub const ALL: [FenceKind; 5] = [
        FenceKind::Page,
        FenceKind::Selection,
        FenceKind::File,
        FenceKind::McpResource,
        FenceKind::ToolResult,
    ];

    /// Finds a kind by its name in a request (`page`, `mcp-resource`: the content kind's short
    /// name) or by its marker name (`web_content`), as [`ContentKind::parse`] does: for a front
    /// end that takes the kind as a string.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::UnknownKind`] for any other name, worded by the fence.
    pub fn parse(name: &str) -> Result<FenceKind, FenceError> {
        let content = ContentKind::parse(name)?;
        FenceKind::ALL
            .into_iter()
            .find(|kind| ContentKind::from(*kind) == content)
            // Only a kind the fence declares after this list is not found.
            .ok_or_else(|| {
                FenceError::new(
                    FenceErrorKind::UnknownKind,
                    format!("{content} cannot be fenced by this command"),
                )
            })
    }
}

impl From<FenceKind> for ContentKind {
    fn from(kind: FenceKind) -> Self {
        match kind {
            FenceKind::Page => ContentKind::Page,
            FenceKind::Selection => ContentKind::Selection,
            FenceKind::File => ContentKind::File,
            FenceKind::McpResource => ContentKind::McpResource,
            FenceKind::ToolResult => ContentKind::ToolResult,
        }
    }
}

/// The body of `fence`: wrap untrusted text, or check a fenced text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct FenceRequest {
    /// The text.
    pub text: String,
    /// Check `text` as a fence instead of wrapping it.
    #[serde(default)]
    pub check: bool,
    /// What the text is (required to wrap).
    pub kind: Option<FenceKind>,
    /// Where it came from (a URL or path).
    pub origin: Option<String>,
    /// The tool that produced it: a registry name.
    #[cfg_attr(feature = "schema", schema(pattern = "^[A-Za-z0-9_-]{1,64}$"))]
    pub tool: Option<String>,
    /// Truncate the body to this many bytes.
    #[serde(default, deserialize_with = "super::whole")]
    #[cfg_attr(feature = "schema", schema(value_type = Option<super::U64Schema>))]
    pub max_bytes: Option<usize>,
}

impl FenceRequest {
    /// The request to wrap `text`, which is of `kind`, from `origin` (and `tool`), its body cut to
    /// `max_bytes` when given: what a package's `fence` call asks.
    pub fn wrap(
        text: String,
        kind: FenceKind,
        origin: Option<String>,
        tool: Option<String>,
        max_bytes: Option<usize>,
    ) -> FenceRequest {
        FenceRequest {
            text,
            check: false,
            kind: Some(kind),
            origin,
            tool,
            max_bytes,
        }
    }
}

/// The answer of `fence`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "schema", schema(as = FenceResponse))]
pub struct FenceResult {
    /// The fenced text (wrapping).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The nonce of both markers (wrapping): for a front end that reports it. Not serialised:
    /// it is in the text.
    #[serde(skip)]
    pub nonce: Option<Nonce>,
    /// Markers and control tokens defanged (wrapping).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defanged: Option<usize>,
    /// The bytes kept and the bytes given, when the body was truncated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<[usize; 2]>,
    /// Whether the text is one valid fence (checking).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid: Option<bool>,
    /// The problems found (checking).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problems: Option<Vec<String>>,
    /// The fence found, when the text is one valid fence (checking): for a front end that
    /// describes it. Not serialised.
    #[serde(skip)]
    pub fence: Option<FenceInfo>,
}

/// Wraps the request's text in a fence with a nonce drawn fresh from the operating system
/// (markers and control tokens inside defanged first, the body cut to `max_bytes` if given), or,
/// with `check`, checks that the text is exactly one valid fence.
///
/// # Errors
///
/// [`Error::FenceKindRequired`] to wrap without a kind; [`Error::Provenance`] for an origin or
/// tool the kind does not take; [`Error::Fence`] when the text cannot be wrapped.
pub fn fence(request: &FenceRequest) -> Result<FenceResult, Error> {
    if request.check {
        let report = promptstack_core::fence::check(&request.text);
        let valid = report.is_valid();
        return Ok(FenceResult {
            text: None,
            nonce: None,
            defanged: None,
            truncated: None,
            valid: Some(valid),
            problems: Some(report.problems.iter().map(ToString::to_string).collect()),
            fence: report.fence.filter(|_| valid),
        });
    }
    let kind = request.kind.ok_or(Error::FenceKindRequired)?;
    let provenance = Provenance::new(
        kind.into(),
        request.origin.as_deref(),
        request.tool.as_deref(),
    )
    .map_err(Error::Provenance)?;
    let mut fence = Fence::new(OsNonces);
    if let Some(max) = request.max_bytes {
        fence = fence.with_limit(MaxBytes(max));
    }
    let wrapped = fence
        .wrap(&request.text, &provenance)
        .map_err(Error::Fence)?;
    Ok(FenceResult {
        text: Some(wrapped.text),
        nonce: Some(wrapped.nonce),
        defanged: Some(wrapped.defanged),
        truncated: wrapped.truncated.map(|t| [t.kept_bytes, t.total_bytes]),
        valid: None,
        problems: None,
        fence: None,
    })
}

/// How `cite` writes citation runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CiteMode {
    /// One `{{cite:K}}` placeholder per run, listed in the citation map.
    #[default]
    Placeholders,
    /// Markdown links `[[N]](url "title")`.
    Links,
}

impl CiteMode {
    /// Every mode, the default first.
    pub const ALL: [CiteMode; 2] = [CiteMode::Placeholders, CiteMode::Links];

    /// The mode's name (`placeholders`, `links`), as serde names it.
    pub fn as_str(self) -> &'static str {
        match self {
            CiteMode::Placeholders => "placeholders",
            CiteMode::Links => "links",
        }
    }
}

impl std::fmt::Display for CiteMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CiteMode {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<CiteMode, UnknownName> {
        CiteMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .ok_or_else(|| UnknownName::new("mode", name, CiteMode::ALL.map(CiteMode::as_str)))
    }
}

impl From<CiteMode> for OutputMode {
    fn from(mode: CiteMode) -> Self {
        match mode {
            CiteMode::Placeholders => OutputMode::Placeholders,
            CiteMode::Links => OutputMode::Links,
        }
    }
}

/// The request of `cite`: the sources, how runs are written, the widget tags parsed out, and
/// whether the citation map is kept for the end.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CiteRequest {
    /// The sources the model may cite.
    pub sources: SourceSnapshot,
    /// How citation runs are written.
    #[serde(default)]
    pub mode: CiteMode,
    /// The widget tags to parse out of the text (`chart`, or with a namespace `widget:map`).
    #[serde(default)]
    pub widgets: Vec<String>,
    /// Keep the citation runs for a final map, at most the `cite-runs` limit of them. Without
    /// it the caller takes the runs after every chunk, and they are not bounded.
    #[serde(default)]
    pub map: bool,
}

/// The result of `cite`: the processor the model's text is pushed through, chunk by chunk, its
/// output (text, widget events, citation map) taken as it comes.
pub type CiteResult = Processor;

/// The citation and math processor `request` asks for, bounded by `limits` (the
/// `cite-link-bytes` limit, and the `cite-runs` limit when the map is kept).
///
/// # Errors
///
/// [`Error::Widgets`] for a widget name that cannot be parsed.
pub fn cite(request: &CiteRequest, limits: &Limits) -> Result<CiteResult, Error> {
    let widgets =
        WidgetSet::new(request.widgets.iter().map(String::as_str)).map_err(Error::Widgets)?;
    let mut config = limits.cite(request.mode.into()).with_widgets(widgets);
    if !request.map {
        config = config.with_max_citation_runs(usize::MAX);
    }
    Ok(Processor::new(&request.sources, config))
}
