//! `CiteStream`: the streaming citation and math processor, fed one model delta at a time.

use promptstack::command::{self, CiteMode, CiteRequest};
use promptstack::compose::UnknownName;
use promptstack::limits::InputKind;
use promptstack::stream::{
    CitationMap, Overflow, OverflowKind, Processor, SourceSnapshot, WidgetEvent,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::convert::{JsonInput, to_python};
use crate::errors::exception;

/// The citation map serialised as the list `promptstack cite --json` prints.
struct Runs<'a>(&'a CitationMap);

impl serde::Serialize for Runs<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

/// Streams model output through the citation and math processor.
///
/// `feed(delta)` returns the text that is decided so far (possibly empty: a citation or math run
/// may still be open); `finish()` returns the rest. The concatenated output does not depend on
/// how the input was cut into deltas.
#[pyclass(module = "promptstack")]
pub struct CiteStream {
    processor: Processor,
    /// Every widget event so far: fewer than [`MAX_WIDGET_EVENTS`] before a delta, and that
    /// delta's own events after it.
    events: Vec<WidgetEvent>,
    finished: bool,
}

/// The sources snapshot: `{"sources": [...]}`, a list of sources, JSON text, or a path.
fn read_sources(value: &Bound<'_, PyAny>) -> PyResult<SourceSnapshot> {
    let value = if value.cast::<PyList>().is_ok() {
        let wrapped = PyDict::new(value.py());
        wrapped.set_item("sources", value)?;
        wrapped.into_any()
    } else {
        value.clone()
    };
    let input = JsonInput::extract(&value, "sources", "<sources>")?;
    let (bytes, name) = input
        .read(InputKind::Sources, crate::agent::limits())
        .map_err(|f| f.into_py(value.py()))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        exception(
            value.py(),
            "StreamError",
            &format!("invalid sources {name}: {e}"),
            "sources",
            PyList::empty(value.py()),
        )
    })
}

fn overflow_error(py: Python<'_>, overflow: Overflow) -> PyErr {
    let kind = match overflow.kind {
        OverflowKind::LinkBytes => "link-bytes",
        _ => "citation-runs",
    };
    exception(
        py,
        "StreamError",
        &format!("{overflow}; output stopped before that citation"),
        kind,
        PyList::empty(py),
    )
}

/// The most widget events a stream takes in (starts, widgets and cancels: 10 000 widgets with
/// their starts): once it holds that many, `feed` raises `StreamError` (code `widgets`) without
/// reading the delta; `finish` still returns the text held.
const MAX_WIDGET_EVENTS: usize = 20_000;

impl CiteStream {
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        match self.processor.overflow() {
            Some(overflow) => Err(overflow_error(py, overflow)),
            None => Ok(()),
        }
    }

    /// Refuses a delta once the stream holds [`MAX_WIDGET_EVENTS`] widget events, before any
    /// of it is read, so no text or event is lost: the text held is still returned by `finish`.
    fn check_room(&self, py: Python<'_>) -> PyResult<()> {
        if self.events.len() < MAX_WIDGET_EVENTS {
            return Ok(());
        }
        Err(exception(
            py,
            "StreamError",
            &format!(
                "the stream holds {} widget events (starts, widgets and cancels) and takes no \
                 more input past {MAX_WIDGET_EVENTS}; this delta was not read, and finish() \
                 returns the text held",
                self.events.len()
            ),
            "widgets",
            PyList::empty(py),
        ))
    }

    fn finished_error(py: Python<'_>) -> PyErr {
        exception(
            py,
            "StreamError",
            "the stream is finished; start a new CiteStream",
            "finished",
            PyList::empty(py),
        )
    }
}

#[pymethods]
impl CiteStream {
    /// A stream resolving citations against `sources` (`{"sources": [{"index": 1, "url": ...,
    /// "title": ...}]}`, a list of such sources, JSON text or a path). `mode` is
    /// `placeholders` (one `{{cite:K}}` per run, listed in `citations`) or `links` (Markdown
    /// links); `widgets` names the widget tags to parse out of the text (`chart`, or with a
    /// namespace `widget:map`).
    #[new]
    #[pyo3(signature = (sources, mode = "placeholders", widgets = None))]
    fn new(sources: &Bound<'_, PyAny>, mode: &str, widgets: Option<Vec<String>>) -> PyResult<Self> {
        let snapshot = read_sources(sources)?;
        let mode: CiteMode = mode.parse().map_err(|_: UnknownName| {
            PyValueError::new_err(format!(
                "mode must be \"placeholders\" or \"links\", not {mode:?}"
            ))
        })?;
        // The citation map is kept for `citations`, within the `cite-runs` limit.
        let request = CiteRequest {
            sources: snapshot,
            mode,
            widgets: widgets.unwrap_or_default(),
            map: true,
        };
        let processor = command::cite(&request, crate::agent::limits()).map_err(|error| {
            PyValueError::new_err(match error {
                command::Error::Widgets(e) => format!("invalid widgets: {e}"),
                other => other.to_string(),
            })
        })?;
        Ok(CiteStream {
            processor,
            events: Vec::new(),
            finished: false,
        })
    }

    /// Feeds one delta of model output; returns the text decided so far.
    fn feed(&mut self, py: Python<'_>, delta: &str) -> PyResult<String> {
        if self.finished {
            return Err(Self::finished_error(py));
        }
        self.check_room(py)?;
        let mut out = String::new();
        self.processor.push_into(delta, &mut out);
        self.events.extend(self.processor.take_widget_events());
        self.check(py)?;
        Ok(out)
    }

    /// Ends the stream; returns the text still held.
    fn finish(&mut self, py: Python<'_>) -> PyResult<String> {
        if self.finished {
            return Err(Self::finished_error(py));
        }
        self.finished = true;
        let mut out = String::new();
        self.processor.finish_into(&mut out);
        self.events.extend(self.processor.take_widget_events());
        self.check(py)?;
        Ok(out)
    }

    /// The citation map so far: dicts with `key`, `placeholder` and `sources` (the list
    /// `promptstack cite --json` ends with).
    #[getter]
    fn citations<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &Runs(self.processor.citations()))
    }

    /// The widget tags removed from the text so far: dicts with `name` (as declared),
    /// `attributes` and `offset` (the byte offset in the whole output where the tag stood).
    #[getter]
    fn widgets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let widgets: Vec<_> = self
            .events
            .iter()
            .filter_map(|event| match event {
                WidgetEvent::Widget(widget) => Some(widget),
                _ => None,
            })
            .collect();
        to_python(py, &widgets)
    }

    /// Every widget event so far, in order, as `promptstack cite --json` prints them: dicts with
    /// `type` (`widget_start` while a declared widget's tag streams, `widget` when it is
    /// removed, `widget_cancel` when it turns out not to be one), `name` and `offset`.
    #[getter]
    fn widget_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.events)
    }

    /// The widget whose tag is streaming now, `{"name", "offset"}` (its offset is where the text
    /// released so far ends), or `None`.
    #[getter]
    fn loading<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.processor.loading_widget())
    }

    /// The citation score of the output so far, as `promptstack cite --json` reports it.
    #[getter]
    fn score<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.processor.score())
    }
}
