//! The `promptstack` Python package's native module, `promptstack._native`.
//!
//! Load a spec once (`Agent`), assemble per send, compose a target or build a provider
//! request: the same engine calls as the command line, so the bytes are the command line's (a
//! provider request, `explain`, `lint`, `fence` and `cite` run the command line's own commands,
//! `promptstack::command`). The GIL is released while the engine works; one `Agent` serves any
//! number of threads.
//!
//! - `agent`: `Agent`, `Assembly`, `Block`, `Composition`.
//! - `fence`: `fence`, `check_fence`.
//! - `cite`: `CiteStream`.
//! - `errors`: engine errors as the exceptions of `promptstack/_errors.py`.
//! - `convert`: sends, conversations and reports between Python values and JSON.
//! - `serde_py`: a serde deserialiser over Python values, for dict sends.

mod agent;
mod cite;
mod convert;
mod errors;
mod fence;
mod serde_py;

use pyo3::prelude::*;

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<agent::Agent>()?;
    m.add_class::<agent::Assembly>()?;
    m.add_class::<agent::Block>()?;
    m.add_class::<agent::Composition>()?;
    m.add_class::<fence::Fenced>()?;
    m.add_class::<fence::FenceCheck>()?;
    m.add_class::<cite::CiteStream>()?;
    m.add_function(wrap_pyfunction!(fence::fence, m)?)?;
    m.add_function(wrap_pyfunction!(fence::check_fence, m)?)?;
    m.add("ENGINE_VERSION", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
