//! Values between Python and JSON: what the package accepts as a send, a conversation or a
//! sources snapshot, and how the engine's serialisable reports reach Python.
//!
//! Inputs arrive as a `dict` (or any mapping of `str` keys), a JSON `str`, JSON `bytes`, or an
//! `os.PathLike` naming a JSON file. A dict send is read straight into the send through serde
//! ([`send_from_dict`]) when the engine's checks of it pass; otherwise, and for every other dict,
//! the dict is written as JSON (with the GIL held) and read by the engine like a file, so every
//! error is located in that text. Outputs that the command line prints as JSON are serialised by
//! the same `serde` code and read back with Python's `json.loads`, so key order and values are
//! the command line's.

use std::path::PathBuf;

use promptstack::limits::{InputKind, Limits};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};
use serde_json::{Map, Value};

use crate::errors::Failure;

/// The deepest nesting a Python value is walked to. The engine refuses documents nested deeper
/// than 64 levels with a located error; this bound only stops a self-referencing dict.
const MAX_DEPTH: usize = 100;

/// A JSON document the engine will read: bytes in memory, or a file to read (without the GIL)
/// through the bounded reader.
pub enum JsonInput {
    /// The document itself, and the name its errors are located in.
    Bytes { bytes: Vec<u8>, name: String },
    /// A file, read through `promptstack::limits`.
    Path(PathBuf),
}

impl JsonInput {
    /// Reads a send, conversation or sources argument: a mapping (or, where `lists` is true, a
    /// list), a JSON `str` or `bytes`, or an `os.PathLike`.
    pub fn extract(value: &Bound<'_, PyAny>, what: &str, name: &str) -> PyResult<Self> {
        if let Ok(text) = value.cast::<PyString>() {
            return Ok(JsonInput::Bytes {
                bytes: text.to_cow()?.as_bytes().to_vec(),
                name: name.to_owned(),
            });
        }
        if let Ok(bytes) = value.cast::<PyBytes>() {
            return Ok(JsonInput::Bytes {
                bytes: bytes.as_bytes().to_vec(),
                name: name.to_owned(),
            });
        }
        if let Ok(bytes) = value.cast::<PyByteArray>() {
            return Ok(JsonInput::Bytes {
                bytes: bytes.to_vec(),
                name: name.to_owned(),
            });
        }
        if value.cast::<PyDict>().is_ok() || value.cast::<PyList>().is_ok() {
            let tree = to_json(value, what, 0)?;
            let bytes = serde_json::to_vec_pretty(&tree)
                .map_err(|e| PyValueError::new_err(format!("{what}: {e}")))?;
            return Ok(JsonInput::Bytes {
                bytes,
                name: name.to_owned(),
            });
        }
        if let Some(path) = fspath(value)? {
            return Ok(JsonInput::Path(path));
        }
        Err(PyTypeError::new_err(format!(
            "{what} must be a dict, a JSON str or bytes, or a path (os.PathLike), not {}",
            value.get_type().name()?
        )))
    }

    /// The name errors are located in: the path as given, or the name chosen for a document.
    pub fn name(&self) -> String {
        match self {
            JsonInput::Bytes { name, .. } => name.clone(),
            JsonInput::Path(path) => path.display().to_string(),
        }
    }

    /// The bytes, reading a file through the bounded reader. Call it without the GIL.
    pub fn read(self, kind: InputKind, limits: &Limits) -> Result<(Vec<u8>, String), Failure> {
        match self {
            JsonInput::Bytes { bytes, name } => Ok((bytes, name)),
            JsonInput::Path(path) => {
                let bytes = promptstack::limits::read(&path, kind, limits)?;
                Ok((bytes, path.display().to_string()))
            }
        }
    }
}

/// Reads a dict send straight into the send through serde ([`crate::serde_py`]), for `spec`: the dict is
/// walked once to check it as the engine checks a send's text (see
/// `SendContext::from_tree_for`), then deserialised. `None` for anything that is not a `dict`,
/// and for a dict the engine would refuse or that cannot be decided without its text: it is then
/// read through [`JsonInput::extract`], whose JSON text gives the located error.
pub fn send_from_dict(
    value: &Bound<'_, PyAny>,
    spec: &promptstack::spec::AgentSpec,
) -> Option<promptstack::SendContext> {
    if !value.is_exact_instance_of::<PyDict>() {
        return None;
    }
    promptstack::SendContext::from_tree_for(
        &PyTree(value.clone()),
        |tree| serde::Deserialize::deserialize(crate::serde_py::PyDeserializer(&tree.0)).ok(),
        Some(spec),
    )
}

/// A Python value seen as a send's tree: the values [`to_json`] accepts, and nothing else.
struct PyTree<'py>(Bound<'py, PyAny>);

/// An upper bound of the length of a `str` written as JSON: each character takes at most six
/// bytes (`\u001f`), and the quotes two.
fn string_json_bytes(text: &Bound<'_, PyAny>) -> Option<usize> {
    text.len().ok()?.checked_mul(6)?.checked_add(2)
}

impl promptstack::context::SendTree for PyTree<'_> {
    fn kind(&self) -> Option<promptstack::context::TreeKind> {
        use promptstack::context::TreeKind;
        let value = &self.0;
        if value.is_none() {
            return Some(TreeKind::Null);
        }
        if value.is_instance_of::<PyString>() {
            return string_json_bytes(value).map(|json_bytes| TreeKind::String { json_bytes });
        }
        // `bool` is a subclass of `int`: test it first.
        if value.is_instance_of::<PyBool>() {
            return Some(TreeKind::Bool);
        }
        if value.is_instance_of::<PyInt>() {
            // As `to_json`: an integer of at most 64 bits, signed or not.
            let fits = value.extract::<i64>().is_ok() || value.extract::<u64>().is_ok();
            return fits
                .then(|| value.extract::<f64>().ok().map(TreeKind::Number))
                .flatten();
        }
        if let Ok(float) = value.cast::<PyFloat>() {
            let float = float.value();
            return float.is_finite().then_some(TreeKind::Number(float));
        }
        // Containers of the exact types only: a subclass may answer serde's mapping and
        // sequence calls otherwise than its items, so it is read through its JSON text.
        if value.is_exact_instance_of::<PyDict>() {
            return Some(TreeKind::Object);
        }
        if value.is_exact_instance_of::<PyList>() || value.is_exact_instance_of::<PyTuple>() {
            return Some(TreeKind::Array);
        }
        None
    }

    fn entries(
        &self,
        need_text: bool,
        each: &mut dyn FnMut(Option<&str>, usize, &Self) -> bool,
    ) -> bool {
        let Ok(dict) = self.0.cast::<PyDict>() else {
            return false;
        };
        for (key, item) in dict.iter() {
            if !key.is_instance_of::<PyString>() {
                return false;
            }
            let Some(key_bytes) = string_json_bytes(&key) else {
                return false;
            };
            let text = match need_text {
                true => match key.cast::<PyString>().map(|key| key.to_cow()) {
                    Ok(Ok(text)) => Some(text),
                    _ => return false,
                },
                false => None,
            };
            if !each(text.as_deref(), key_bytes, &PyTree(item)) {
                return false;
            }
        }
        true
    }

    fn items(&self, each: &mut dyn FnMut(&Self) -> bool) -> bool {
        if let Ok(list) = self.0.cast::<PyList>() {
            return list.iter().all(|item| each(&PyTree(item)));
        }
        if let Ok(tuple) = self.0.cast::<PyTuple>() {
            return tuple.iter().all(|item| each(&PyTree(item)));
        }
        false
    }
}

/// The path of an `os.PathLike` (not a `str`: a `str` is a document), or `None`.
pub fn fspath(value: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if value.is_instance_of::<PyString>() || !value.hasattr("__fspath__")? {
        return Ok(None);
    }
    let path = value.call_method0("__fspath__")?;
    if let Ok(text) = path.cast::<PyString>() {
        return Ok(Some(PathBuf::from(text.to_cow()?.into_owned())));
    }
    if let Ok(bytes) = path.cast::<PyBytes>() {
        let text = std::str::from_utf8(bytes.as_bytes())
            .map_err(|_| PyValueError::new_err("a path given as bytes must be UTF-8"))?;
        return Ok(Some(PathBuf::from(text)));
    }
    Err(PyTypeError::new_err(
        "__fspath__ returned neither str nor bytes",
    ))
}

/// A Python value as JSON: mappings with `str` keys, lists and tuples, `str`, `bool`, `int`,
/// finite `float` and `None`. Anything else is a `TypeError` naming where it is.
fn to_json(value: &Bound<'_, PyAny>, at: &str, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "{at}: nested deeper than {MAX_DEPTH} levels"
        )));
    }
    if value.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(text) = value.cast::<PyString>() {
        return Ok(Value::String(text.to_cow()?.into_owned()));
    }
    // `bool` is a subclass of `int`: test it first.
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if value.cast::<PyInt>().is_ok() {
        if let Ok(n) = value.extract::<i64>() {
            return Ok(Value::from(n));
        }
        if let Ok(n) = value.extract::<u64>() {
            return Ok(Value::from(n));
        }
        return Err(PyValueError::new_err(format!(
            "{at}: the integer does not fit in 64 bits"
        )));
    }
    if let Ok(float) = value.cast::<PyFloat>() {
        return serde_json::Number::from_f64(float.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err(format!("{at}: {} is not JSON", float.value())));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(PyTypeError::new_err(format!(
                    "{at}: keys must be str, not {}",
                    key.get_type().name()?
                )));
            };
            let key = key.to_cow()?;
            let item = to_json(&item, &format!("{at}.{key}"), depth + 1)?;
            map.insert(key.into_owned(), item);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = value.cast::<PyList>() {
        return list
            .iter()
            .enumerate()
            .map(|(i, item)| to_json(&item, &format!("{at}[{i}]"), depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return tuple
            .iter()
            .enumerate()
            .map(|(i, item)| to_json(&item, &format!("{at}[{i}]"), depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    Err(PyTypeError::new_err(format!(
        "{at}: a {} is not a JSON value",
        value.get_type().name()?
    )))
}

/// Python's `json.loads`, looked up once.
fn json_loads(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    LOADS
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("json")?.getattr("loads")?.unbind())
        })
        .map(|f| f.bind(py))
}

/// A JSON document as Python values (dicts keep the document's key order).
pub fn from_json_text<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    json_loads(py)?.call1((text,))
}

/// A serialisable value as Python values, through its JSON form.
pub fn to_python<'py>(
    py: Python<'py>,
    value: &impl serde::Serialize,
) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value)
        .map_err(|e| PyValueError::new_err(format!("cannot serialise: {e}")))?;
    from_json_text(py, &text)
}
