//! `Agent`, `Assembly`, `Block` and `Composition`: the engine's pipeline for Python.
//!
//! Load once (`Agent.from_path`, `Agent.from_source`), assemble per send, compose a target or
//! build a provider request. Parsing a send, assembling, composing and building a request run
//! without the GIL, so threads sharing one `Agent` run in parallel.

use std::sync::Arc;

use promptstack::command::{
    self, Assembled, Env, ExplainRequest, RequestRequest, RequestSettings, read_conversation,
};
use promptstack::limits::{InputKind, Limit, Limits};
use promptstack::provider::{Conversation, Format, Request, Rules};
use promptstack::{SendContext, SpecFormat};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::convert::{JsonInput, from_json_text, fspath, send_from_dict, to_python};
use crate::errors::Failure;

/// The name a send given as a dict, `str` or `bytes` is located in.
const SEND_NAME: &str = "<send>";

/// The limits every read and assembly of the package uses: the command line's defaults.
pub(crate) fn limits() -> &'static Limits {
    static LIMITS: std::sync::OnceLock<Limits> = std::sync::OnceLock::new();
    LIMITS.get_or_init(Limits::default)
}

/// A spec format by name.
fn spec_format(name: &str) -> PyResult<SpecFormat> {
    match name {
        "toml" => Ok(SpecFormat::Toml),
        "json" => Ok(SpecFormat::Json),
        other => Err(PyValueError::new_err(format!(
            "format must be \"toml\" or \"json\", not {other:?}"
        ))),
    }
}

/// A provider request format by its command-line name.
pub fn provider_format(name: &str) -> PyResult<Format> {
    name.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "format must be one of {}, not {name:?}",
            Format::ALL.map(Format::as_str).join(", ")
        ))
    })
}

/// Reads a send (a dict, JSON `str` or `bytes`, or a path) for `agent`, without the GIL.
fn read_send(agent: &promptstack::Agent, input: JsonInput) -> Result<SendContext, Failure> {
    let (bytes, name) = input.read(InputKind::Send, limits())?;
    SendContext::from_json_for(&bytes, &name, agent.spec()).map_err(Failure::Send)
}

/// A compiled agent spec: load it once, then assemble every send with it.
///
/// An `Agent` is immutable and safe to share between threads: its caches (the stable half,
/// volatile units, token counts) are shared by every thread that assembles with it, and the GIL
/// is released while it works.
#[pyclass(frozen, module = "promptstack")]
pub struct Agent {
    inner: promptstack::Agent,
}

#[pymethods]
impl Agent {
    /// Reads and compiles the agent spec at `path` (TOML, or JSON if the name ends in `.json`),
    /// with the capability manifests in the `capabilities/` folder next to it.
    #[staticmethod]
    fn from_path(py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<Self> {
        let path = match fspath(path)? {
            Some(path) => path,
            None => std::path::PathBuf::from(path.extract::<String>()?),
        };
        py.detach(move || -> Result<Self, Failure> {
            let bytes = promptstack::limits::read(&path, InputKind::Spec, limits())?;
            let name = path.display().to_string();
            let inner = promptstack::registry::compile(
                &bytes,
                &path,
                SpecFormat::from_name(&name),
                limits(),
            )?;
            Ok(Agent { inner })
        })
        .map_err(|f| f.into_py(py))
    }

    /// Compiles an agent spec given as text (`str` or `bytes`), in `format` (`"toml"` or
    /// `"json"`); `name` is the file name its errors are located in.
    #[staticmethod]
    #[pyo3(signature = (text, format = "toml", name = None))]
    fn from_source(
        py: Python<'_>,
        text: &Bound<'_, PyAny>,
        format: &str,
        name: Option<String>,
    ) -> PyResult<Self> {
        let format = spec_format(format)?;
        let bytes: Vec<u8> = match text.cast::<PyString>() {
            Ok(s) => s.to_cow()?.as_bytes().to_vec(),
            Err(_) => text
                .extract::<Vec<u8>>()
                .map_err(|_| pyo3::exceptions::PyTypeError::new_err("text must be str or bytes"))?,
        };
        let name = name.unwrap_or_else(|| match format {
            SpecFormat::Toml => "<source>.toml".to_owned(),
            SpecFormat::Json => "<source>.json".to_owned(),
        });
        py.detach(move || -> Result<Self, Failure> {
            let agent = promptstack::Agent::from_source(&bytes, &name, format)
                .map_err(Failure::Spec)?
                .with_template_memory(limits().get(Limit::TemplateMemory));
            Ok(Agent { inner: agent })
        })
        .map_err(|f| f.into_py(py))
    }

    /// The agent's name.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// The ids of the spec's targets, in spec order.
    #[getter]
    fn targets(&self) -> Vec<String> {
        self.inner.target_ids().map(str::to_owned).collect()
    }

    /// Assembles one send: `send` is a dict, a JSON `str` or `bytes`, or a path to a JSON file;
    /// `name` is what errors in a send given as data are located in.
    #[pyo3(signature = (send, name = None))]
    fn assemble(
        &self,
        py: Python<'_>,
        send: &Bound<'_, PyAny>,
        name: Option<&str>,
    ) -> PyResult<Assembly> {
        // A dict the engine accepts is the send already; anything else is read as JSON.
        let input = match send_from_dict(send, self.inner.spec()) {
            Some(ready) => Ok(ready),
            None => Err(JsonInput::extract(send, "send", name.unwrap_or(SEND_NAME))?),
        };
        let agent = self.inner.clone();
        py.detach(move || -> Result<Assembly, Failure> {
            let send = match input {
                Ok(ready) => ready,
                Err(input) => read_send(&agent, input)?,
            };
            let assembly = agent.assemble(&send)?;
            Ok(Assembly {
                agent,
                assembly: Arc::new(assembly),
                send: Arc::new(send),
            })
        })
        .map_err(|f| f.into_py(py))
    }

    /// Lints the spec, and checks it against each send: the findings of `promptstack lint
    /// --json`, as a list of dicts (`severity`, `code`, `message`, and where known `send`,
    /// `subject`, `location`, `hint`). `sends` is a mapping of names to sends, or an iterable of
    /// sends (named by their path, or `sends[i]`).
    #[pyo3(signature = (sends = None))]
    fn lint<'py>(
        &self,
        py: Python<'py>,
        sends: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut inputs: Vec<(String, JsonInput)> = Vec::new();
        if let Some(sends) = sends {
            if let Ok(map) = sends.cast::<PyDict>() {
                for (key, value) in map.iter() {
                    let key: String = key.extract()?;
                    inputs.push((key.clone(), JsonInput::extract(&value, "send", &key)?));
                }
            } else {
                for (i, value) in sends.try_iter()?.enumerate() {
                    let input = JsonInput::extract(&value?, "send", &format!("sends[{i}]"))?;
                    inputs.push((input.name(), input));
                }
            }
        }
        let agent = self.inner.clone();
        let findings = py
            .detach(move || -> Result<String, Failure> {
                let mut named = Vec::with_capacity(inputs.len());
                for (name, input) in inputs {
                    named.push((name, read_send(&agent, input)?));
                }
                let linted = command::lint(
                    &agent,
                    named.iter().map(|(name, send)| (name.as_str(), send)),
                );
                serde_json::to_string(&linted.findings).map_err(|e| Failure::Request(e.to_string()))
            })
            .map_err(|f| f.into_py(py))?;
        from_json_text(py, &findings)
    }

    /// Assembles `send` and explains it: the document `promptstack explain --json` prints.
    /// See `Assembly.explain`.
    #[pyo3(signature = (send, target = None, format = None, name = None))]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        send: &Bound<'py, PyAny>,
        target: Option<&str>,
        format: Option<&str>,
        name: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.assemble(py, send, name)?.explain(py, target, format)
    }

    /// Hits and misses of the agent's caches, as a dict.
    fn cache_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.inner.cache_stats())
    }

    fn __repr__(&self) -> String {
        format!("<promptstack.Agent {:?}>", self.inner.name())
    }
}

/// What an agent sends for one send: every block with its provenance, the stable and volatile
/// halves, the fingerprint of the stable half, and the diagnostics.
#[pyclass(frozen, module = "promptstack")]
pub struct Assembly {
    agent: promptstack::Agent,
    assembly: Arc<promptstack::Assembly>,
    send: Arc<SendContext>,
}

/// A provider request asked from Python, read with the GIL held: the command's request, and
/// what is read without the GIL (the conversation and the rules table, each of which may be a
/// file).
struct RequestArgs {
    request: RequestRequest,
    conversation: Option<JsonInput>,
    plan: bool,
    rules: Option<JsonInput>,
}

impl Assembly {
    /// Builds a request without the GIL.
    fn build(&self, py: Python<'_>, args: RequestArgs) -> PyResult<Request> {
        let agent = self.agent.clone();
        let assembly = Arc::clone(&self.assembly);
        py.detach(move || build_request(&agent, &assembly, args))
            .map_err(|f| f.into_py(py))
    }
}

/// The rules table: the one given (TOML), or the bundled one; without `plan`, the same table with
/// explicit cache breakpoints turned off.
fn rules(input: Option<JsonInput>, plan: bool) -> Result<Rules, Failure> {
    let mut rules = match input {
        None => Rules::bundled().clone(),
        Some(input) => {
            let (bytes, name) = input.read(InputKind::Rules, limits())?;
            let text = String::from_utf8(bytes)
                .map_err(|_| Failure::Request(format!("{name} is not UTF-8")))?;
            Rules::from_toml(&text, &name)?
        }
    };
    if !plan {
        for row in &mut rules.rows {
            row.explicit_breakpoints = false;
        }
    }
    Ok(rules)
}

/// Builds the request `args` asks for through the `request` command, over the conversation read
/// here (a dict, JSON or a file, under the name its errors give it).
fn build_request(
    agent: &promptstack::Agent,
    assembly: &promptstack::Assembly,
    args: RequestArgs,
) -> Result<Request, Failure> {
    let conversation = match args.conversation {
        None => Conversation::default(),
        Some(input) => {
            let (bytes, name) = input.read(InputKind::Conversation, limits())?;
            read_conversation(&bytes, &name, limits())?
        }
    };
    let rules = rules(args.rules, args.plan)?;
    let env = Env {
        limits: limits(),
        rules: &rules,
    };
    Ok(command::request_with(agent, assembly, &args.request, &conversation, &env)?.value)
}

#[pymethods]
impl Assembly {
    /// The stable half: the byte-identical prefix a provider can cache.
    #[getter]
    fn stable(&self) -> &str {
        self.assembly.stable()
    }

    /// The volatile half.
    #[getter]
    fn volatile(&self) -> &str {
        self.assembly.volatile()
    }

    /// The whole body text: the stable half, then the volatile half.
    #[getter]
    fn full(&self) -> &str {
        self.assembly.full()
    }

    /// The SHA-256 fingerprint of the stable half, in hex.
    #[getter]
    fn fingerprint(&self) -> String {
        self.assembly.fingerprint().to_string()
    }

    /// Every block, in assembly order, included or not.
    #[getter]
    fn blocks(&self, py: Python<'_>) -> Vec<Block> {
        // Token counts are computed on first use: count them without holding the interpreter.
        let assembly = Arc::clone(&self.assembly);
        py.detach(move || assembly.blocks().map(Block::from).collect())
    }

    /// The findings of this assembly (excluded blocks, empty variables, ...), as dicts with
    /// `severity`, `code`, `message` and where known `subject`, `location`, `hint`.
    #[getter]
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let diagnostics: Vec<_> = self.assembly.diagnostics().collect();
        to_python(py, &diagnostics)
    }

    /// The ids of the spec's targets.
    #[getter]
    fn targets(&self) -> Vec<String> {
        self.assembly.target_ids().map(str::to_owned).collect()
    }

    /// The names of the tools this send has, in canonical order.
    #[getter]
    fn tools(&self) -> Vec<String> {
        self.assembly.toolset().names().map(str::to_owned).collect()
    }

    /// Tokens of the stable half.
    #[getter]
    fn stable_tokens(&self) -> u32 {
        self.assembly.stable_tokens().count
    }

    /// Tokens of the volatile half.
    #[getter]
    fn volatile_tokens(&self) -> u32 {
        self.assembly.volatile_tokens().count
    }

    /// Whether token counts are exact (False: an o200k estimate for this model).
    #[getter]
    fn tokens_exact(&self) -> bool {
        self.assembly.counting().exact
    }

    /// The exact texts one target sends: its system text and the notes for the last user
    /// message.
    fn compose(&self, py: Python<'_>, target: &str) -> PyResult<Composition> {
        let assembly = Arc::clone(&self.assembly);
        let target = target.to_owned();
        py.detach(move || -> Result<Composition, Failure> {
            let composition = assembly.compose(&target)?;
            Ok(Composition {
                composition,
                separator: assembly.separator().to_owned(),
            })
        })
        .map_err(|f| f.into_py(py))
    }

    /// The provider request body for this send, as a dict. See `request_json` for the
    /// arguments; the dict is `json.loads(request_json(...))`.
    #[pyo3(signature = (format, conversation = None, plan = true, *, target = None, model = None, max_tokens = 4096, gap_seconds = None, cache_key = None, cached_content = None, rules = None))]
    #[allow(clippy::too_many_arguments)]
    fn request<'py>(
        &self,
        py: Python<'py>,
        format: &str,
        conversation: Option<&Bound<'py, PyAny>>,
        plan: bool,
        target: Option<String>,
        model: Option<String>,
        max_tokens: u32,
        gap_seconds: Option<u32>,
        cache_key: Option<String>,
        cached_content: Option<String>,
        rules: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let body = self.request_json(
            py,
            format,
            conversation,
            plan,
            target,
            model,
            max_tokens,
            gap_seconds,
            cache_key,
            cached_content,
            rules,
        )?;
        from_json_text(py, &body)
    }

    /// The provider request body for this send, as the exact JSON text sent (the bytes
    /// `promptstack render --format FORMAT` prints).
    ///
    /// `format` is `anthropic`, `openai-chat`, `openai-responses` or `gemini`; `conversation`
    /// the conversation so far (`{"messages": [...]}` as a dict, JSON or a path). With `plan`
    /// (the default), cache breakpoints are placed from the rules table; without it the body has
    /// none. `target` defaults to the spec's only target; `model` to the send's model id;
    /// `rules` (TOML text or a path) replaces the bundled rules table.
    #[pyo3(signature = (format, conversation = None, plan = true, *, target = None, model = None, max_tokens = 4096, gap_seconds = None, cache_key = None, cached_content = None, rules = None))]
    #[allow(clippy::too_many_arguments)]
    fn request_json(
        &self,
        py: Python<'_>,
        format: &str,
        conversation: Option<&Bound<'_, PyAny>>,
        plan: bool,
        target: Option<String>,
        model: Option<String>,
        max_tokens: u32,
        gap_seconds: Option<u32>,
        cache_key: Option<String>,
        cached_content: Option<String>,
        rules: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let args = request_args(
            format,
            conversation,
            plan,
            target,
            model,
            max_tokens,
            gap_seconds,
            cache_key,
            cached_content,
            rules,
        )?;
        Ok(self.build(py, args)?.body)
    }

    /// The request with its cache plan: the document `promptstack render --format FORMAT
    /// --plan` prints (`format`, `model`, `target`, `body`, `plan`, `units`), as a dict.
    /// Arguments as for `request_json`.
    #[pyo3(signature = (format, conversation = None, *, target = None, model = None, max_tokens = 4096, gap_seconds = None, cache_key = None, cached_content = None, rules = None))]
    #[allow(clippy::too_many_arguments)]
    fn request_plan<'py>(
        &self,
        py: Python<'py>,
        format: &str,
        conversation: Option<&Bound<'py, PyAny>>,
        target: Option<String>,
        model: Option<String>,
        max_tokens: u32,
        gap_seconds: Option<u32>,
        cache_key: Option<String>,
        cached_content: Option<String>,
        rules: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = request_args(
            format,
            conversation,
            true,
            target,
            model,
            max_tokens,
            gap_seconds,
            cache_key,
            cached_content,
            rules,
        )?;
        let request = self.build(py, args)?;
        let out = PyDict::new(py);
        out.set_item("format", request.format.as_str())?;
        out.set_item("model", &request.model)?;
        out.set_item("target", &request.target)?;
        out.set_item("body", from_json_text(py, &request.body)?)?;
        out.set_item("plan", to_python(py, &request.plan)?)?;
        out.set_item("units", to_python(py, &request.units)?)?;
        Ok(out.into_any())
    }

    /// The explanation of this assembly: the document `promptstack explain --json` prints
    /// (the assembly, each target's composition with token counts, injections and, with a
    /// provider `format`, the cache breakpoints each target's request would carry).
    #[pyo3(signature = (target = None, format = None))]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        target: Option<&str>,
        format: Option<&str>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let format = format.map(provider_format).transpose()?;
        let agent = self.agent.clone();
        let assembly = Arc::clone(&self.assembly);
        let send = Arc::clone(&self.send);
        let target = target.map(str::to_owned);
        let text = py
            .detach(move || -> Result<String, Failure> {
                let on = Assembled {
                    agent: &agent,
                    send: &send,
                    assembly: &assembly,
                };
                let request = ExplainRequest { target, format };
                let explanation = command::explain(&on, &request, &Env::bundled(limits()))?;
                serde_json::to_string(&explanation).map_err(|e| Failure::Request(e.to_string()))
            })
            .map_err(|f| f.into_py(py))?;
        from_json_text(py, &text)
    }

    fn __repr__(&self) -> String {
        format!(
            "<promptstack.Assembly of {:?} {}>",
            self.agent.name(),
            self.assembly.fingerprint().short()
        )
    }
}

#[allow(clippy::too_many_arguments)]
fn request_args(
    format: &str,
    conversation: Option<&Bound<'_, PyAny>>,
    plan: bool,
    target: Option<String>,
    model: Option<String>,
    max_tokens: u32,
    gap_seconds: Option<u32>,
    cache_key: Option<String>,
    cached_content: Option<String>,
    rules: Option<&Bound<'_, PyAny>>,
) -> PyResult<RequestArgs> {
    let format = provider_format(format)?;
    let conversation = conversation
        .filter(|c| !c.is_none())
        .map(|c| JsonInput::extract(c, "conversation", "<conversation>"))
        .transpose()?;
    let rules = rules
        .filter(|r| !r.is_none())
        .map(|r| JsonInput::extract(r, "rules", "<rules>"))
        .transpose()?;
    let request = RequestRequest {
        target,
        format,
        options: RequestSettings {
            // Read without the GIL, under its own name: see `build_request`.
            conversation: None,
            model,
            max_tokens: Some(max_tokens),
            gap_seconds,
            cache_key,
            cached_content,
        },
    };
    Ok(RequestArgs {
        request,
        conversation,
        plan,
        rules,
    })
}

/// One block of an assembly, with its provenance.
#[pyclass(frozen, module = "promptstack", get_all)]
pub struct Block {
    /// The id from the spec.
    id: String,
    /// `block`, `note`, ... (the spec's kind).
    kind: &'static str,
    /// Who controls its text: `author`, `platform`, `user`, ...
    trust: &'static str,
    /// `stable` or `volatile`.
    stability: &'static str,
    /// `body` or `target`.
    placement: &'static str,
    /// Whether the text is part of the output.
    included: bool,
    /// Why the block is excluded (`None` when included).
    reason: Option<String>,
    /// The token count of the text.
    tokens: u32,
    /// The rendered text (empty when excluded).
    text: String,
    /// `default`, `custom`, `off` or `fallback`.
    #[pyo3(name = "override")]
    override_state: &'static str,
    /// The variant whose text was used, if any.
    variant: Option<String>,
    /// Where the text came from: `file:line`, or the builder, tenant or capability.
    origin: String,
}

impl From<&promptstack::block::Block> for Block {
    fn from(block: &promptstack::block::Block) -> Self {
        use promptstack::block::BlockState;
        Block {
            id: block.id.to_string(),
            kind: block.kind.as_str(),
            trust: block.trust.as_str(),
            stability: block.stability.as_str(),
            placement: match block.placement {
                promptstack::spec::Placement::Body => "body",
                _ => "target",
            },
            included: block.is_included(),
            reason: match &block.state {
                BlockState::Included => None,
                BlockState::Excluded { reason } => Some(reason.to_string()),
            },
            tokens: block.tokens().count,
            text: block.text.clone(),
            override_state: block.override_state.as_str(),
            variant: block.variant.clone(),
            origin: block.origin.short(),
        }
    }
}

#[pymethods]
impl Block {
    fn __repr__(&self) -> String {
        format!(
            "<promptstack.Block {:?} {} {}>",
            self.id,
            self.stability,
            if self.included {
                "included"
            } else {
                "excluded"
            }
        )
    }
}

/// The texts one target sends.
#[pyclass(frozen, module = "promptstack")]
pub struct Composition {
    composition: promptstack::compose::Composition,
    /// The spec's separator between parts, which also separates notes from the user's text.
    separator: String,
}

#[pymethods]
impl Composition {
    /// The target's id.
    #[getter]
    fn target(&self) -> &str {
        &self.composition.target
    }

    /// The system text, exactly as sent.
    #[getter]
    fn system(&self) -> &str {
        &self.composition.system
    }

    /// The notes for the last user message (empty when there are none).
    #[getter]
    fn user(&self) -> &str {
        &self.composition.user
    }

    /// Whether `user` goes `before` or `after` the user's own text.
    #[getter]
    fn user_position(&self) -> &'static str {
        match self.composition.user_position {
            promptstack::spec::UserPosition::Before => "before",
            _ => "after",
        }
    }

    /// The leading stable run of the system text: the part a provider can cache.
    #[getter]
    fn stable_prefix(&self) -> &str {
        &self.composition.system[..self.composition.stable_prefix]
    }

    /// Every block's place: dicts with `id`, `slot` (`system` or `user`), `range` (UTF-8 byte
    /// offsets `{"start", "end"}` in that text), `stability` and `trust`.
    #[getter]
    fn parts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.composition.parts)
    }

    /// Blocks shed to fit the target's token budget, in shedding order.
    #[getter]
    fn shed<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.composition.shed)
    }

    /// Findings of this composition (shed blocks, a budget pinned blocks exceed).
    #[getter]
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_python(py, &self.composition.diagnostics)
    }

    /// The user's message with this target's notes placed around it.
    fn user_message(&self, message: &str) -> String {
        self.composition.user_message(message, &self.separator)
    }

    fn __repr__(&self) -> String {
        format!(
            "<promptstack.Composition {:?}: {} bytes system, {} bytes user>",
            self.composition.target,
            self.composition.system.len(),
            self.composition.user.len()
        )
    }
}
