//! Engine errors as Python exceptions carrying their diagnostics as data.
//!
//! The exception classes are plain Python classes (`promptstack/_errors.py`) so that they are
//! documented, picklable and typed like any other; this module builds their instances. Work done
//! without the GIL returns a [`Failure`], which becomes an exception once the GIL is held again.

use promptstack::command;
use promptstack::fence::FenceError;
use promptstack::limits::InputError;
use promptstack::registry::LoadError;
use promptstack::{Error, ErrorKind, SpecError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyType};

/// Anything the engine can fail with, held until the GIL is back.
#[derive(Debug)]
pub enum Failure {
    /// A spec that cannot be loaded.
    Spec(SpecError),
    /// A send context that cannot be loaded.
    Send(SpecError),
    /// A file that cannot be read.
    Input(InputError),
    /// An assembly, composition or request error.
    Engine(Error),
    /// A capability manifest next to the spec is invalid.
    Manifest(Error),
    /// A fence argument that cannot be made safe.
    Fence(FenceError),
    /// A request that cannot be built for a reason the engine does not type (e.g. no target).
    Request(String),
}

impl From<InputError> for Failure {
    fn from(error: InputError) -> Self {
        Failure::Input(error)
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        Failure::Engine(error)
    }
}

impl From<FenceError> for Failure {
    fn from(error: FenceError) -> Self {
        Failure::Fence(error)
    }
}

impl From<command::Error> for Failure {
    fn from(error: command::Error) -> Self {
        match error {
            command::Error::TargetRequired(several) => {
                Failure::Request(several.message("choose one with target="))
            }
            command::Error::Conversation(e) | command::Error::Engine(e) => Failure::Engine(e),
            command::Error::Provenance(e) | command::Error::Fence(e) => Failure::Fence(e),
            // The other refusals are of options this package does not pass.
            other => Failure::Request(other.to_string()),
        }
    }
}

impl From<LoadError> for Failure {
    fn from(error: LoadError) -> Self {
        match error {
            LoadError::Spec(e) => Failure::Spec(e),
            LoadError::Input(e) => Failure::Input(e),
            LoadError::Manifest(e) => Failure::Manifest(e),
            other => Failure::Request(other.to_string()),
        }
    }
}

/// The exception class `name` of `promptstack._errors`.
fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let module = MODULE.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("promptstack._errors")?.unbind())
    })?;
    Ok(module.bind(py).getattr(name)?.cast_into()?)
}

/// An exception of class `name` with a message, a kind and diagnostics.
pub fn exception(
    py: Python<'_>,
    name: &str,
    message: &str,
    kind: &str,
    diagnostics: Bound<'_, PyList>,
) -> PyErr {
    match class(py, name).and_then(|cls| cls.call1((message, kind, diagnostics))) {
        Ok(instance) => PyErr::from_value(instance),
        Err(error) => error,
    }
}

/// The diagnostics of a spec or send error: code, message, key path, JSON pointer, location
/// (file, line, column) and hint of every problem.
fn spec_diagnostics<'py>(py: Python<'py>, error: &SpecError) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for d in &error.diagnostics {
        let item = PyDict::new(py);
        item.set_item("code", d.code)?;
        item.set_item("message", &d.message)?;
        item.set_item("path", &d.path)?;
        item.set_item("pointer", d.pointer())?;
        match &d.location {
            Some(location) => {
                let at = PyDict::new(py);
                at.set_item("file", &location.file)?;
                at.set_item("line", location.line)?;
                at.set_item("column", location.column)?;
                item.set_item("location", at)?;
            }
            None => item.set_item("location", py.None())?,
        }
        item.set_item("hint", d.hint.as_deref())?;
        list.append(item)?;
    }
    Ok(list)
}

/// One diagnostic for an error that is not located in a file.
fn single<'py>(
    py: Python<'py>,
    code: &str,
    message: &str,
    subject: Option<&str>,
) -> PyResult<Bound<'py, PyList>> {
    let item = PyDict::new(py);
    item.set_item("code", code)?;
    item.set_item("message", message)?;
    item.set_item("subject", subject)?;
    PyList::new(py, [item])
}

impl Failure {
    /// The Python exception.
    pub fn into_py(self, py: Python<'_>) -> PyErr {
        self.build(py).unwrap_or_else(|e| e)
    }

    fn build(self, py: Python<'_>) -> PyResult<PyErr> {
        Ok(match self {
            Failure::Spec(e) => {
                let error = exception(
                    py,
                    "SpecError",
                    &e.to_string(),
                    "spec",
                    spec_diagnostics(py, &e)?,
                );
                mark_truncated(py, &error, e.truncated)?;
                error
            }
            Failure::Send(e) => {
                let error = exception(
                    py,
                    "SendError",
                    &e.to_string(),
                    "send",
                    spec_diagnostics(py, &e)?,
                );
                mark_truncated(py, &error, e.truncated)?;
                error
            }
            Failure::Input(e) => {
                let message = e.to_string();
                let code = if e.is_not_found() {
                    "not-found"
                } else {
                    "input"
                };
                exception(
                    py,
                    "InputError",
                    &message,
                    code,
                    single(py, code, &message, None)?,
                )
            }
            Failure::Manifest(e) => {
                let message = e.to_string();
                exception(
                    py,
                    "SpecError",
                    &message,
                    "manifest",
                    single(py, "manifest", &message, e.block())?,
                )
            }
            Failure::Engine(e) => {
                let kind = e.kind().as_str();
                let class = match e.kind() {
                    ErrorKind::NotFound => "NotFoundError",
                    ErrorKind::Request | ErrorKind::Rules => "RequestError",
                    ErrorKind::Context => "SendError",
                    _ => "AssemblyError",
                };
                let message = e.to_string();
                exception(
                    py,
                    class,
                    &message,
                    kind,
                    single(py, kind, &message, e.block())?,
                )
            }
            Failure::Fence(e) => {
                let kind = e.kind().as_str();
                let message = e.to_string();
                exception(
                    py,
                    "FenceError",
                    &message,
                    kind,
                    single(py, kind, &message, None)?,
                )
            }
            Failure::Request(message) => exception(
                py,
                "RequestError",
                &message,
                "request",
                single(py, "request", &message, None)?,
            ),
        })
    }
}

/// Sets `truncated` on a spec or send error whose problems were cut at the reporting limit.
fn mark_truncated(py: Python<'_>, error: &PyErr, truncated: bool) -> PyResult<()> {
    error.value(py).setattr("truncated", truncated)
}
