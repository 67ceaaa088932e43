//! Recordings: each exchange with a model kept on disk, so a run can be replayed offline.
//!
//! An exchange is filed under a key made of the request format, the model, the repetition index
//! and the canonical request body ([`key`]): the same request asked again at another repetition is
//! another exchange, so K repetitions replayed stay K samples. A recording holds the request as
//! sent, the answer's status and its raw streamed bytes; replaying reads the bytes through the
//! same stream reader as a live run. A request carries no credential (keys travel in headers, and
//! headers are not kept), so none can reach a recording.
//!
//! [`Recording`] wraps any endpoint and saves each exchange it completes; [`Replay`] answers from
//! disk only.
//!
//! Recordings are input like any other: a file is read only if it is a regular file of at most
//! [`MAX_RECORDING_BYTES`], and one that does not hold the exchange its name promises is refused.

use std::fmt;
use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::endpoint::{Call, Endpoint, EndpointError, EndpointErrorKind, Reply, ReplyFuture};

/// The largest recording read, in bytes.
pub const MAX_RECORDING_BYTES: u64 = 16 * 1024 * 1024;

/// The format version of a recording file.
pub const RECORDING_VERSION: u32 = 1;

/// One exchange with a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The request format (`openai-chat`, `anthropic`, …).
    pub format: String,
    /// The model name the request was sent to.
    pub model: String,
    /// The repetition index of the scenario run.
    pub repetition: u32,
    /// The request body, as sent.
    pub request: serde_json::Value,
    /// The answer's HTTP status.
    pub status: u16,
    /// The answer's body, byte for byte as streamed.
    pub body: Vec<u8>,
}

/// The file form of an exchange: the body as text when it is UTF-8 (most are: server-sent events
/// are text), else as base64.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    recording_version: u32,
    key: String,
    format: String,
    model: String,
    repetition: u32,
    request: serde_json::Value,
    status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    body_base64: Option<String>,
}

/// Why a recording could not be written or read.
#[derive(Debug)]
pub enum RecordingError {
    /// No recording holds this exchange: replaying never falls back to a live call.
    Missing {
        /// The exchange's key (its file is `<key>.json`).
        key: String,
        /// The model asked.
        model: String,
        /// The repetition asked.
        repetition: u32,
    },
    /// The file is not a regular file, or is larger than [`MAX_RECORDING_BYTES`].
    Refused(PathBuf, String),
    /// The file is not a recording of this format version, or not of the exchange its name
    /// promises.
    Invalid(PathBuf, String),
    /// Reading or writing failed.
    Io(PathBuf, std::io::Error),
}

impl fmt::Display for RecordingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordingError::Missing {
                key,
                model,
                repetition,
            } => write!(
                f,
                "no recording of this request to `{model}` at repetition {repetition} (key {key}); record it first, or run live"
            ),
            RecordingError::Refused(path, why) | RecordingError::Invalid(path, why) => {
                write!(f, "{}: {why}", path.display())
            }
            RecordingError::Io(path, error) => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for RecordingError {}

/// The key of an exchange: lowercase hex SHA-256 over the format, the model, the repetition and
/// the canonical request body, each length-prefixed so no two exchanges share their bytes.
pub fn key(format: &str, model: &str, repetition: u32, request: &serde_json::Value) -> String {
    let body = promptstack_core::provider::canonical_json(request);
    let mut hasher = Sha256::new();
    for part in [format.as_bytes(), model.as_bytes(), body.as_bytes()] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hasher.update(repetition.to_le_bytes());
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A folder of recordings.
#[derive(Debug, Clone)]
pub struct Recordings {
    dir: PathBuf,
}

impl Recordings {
    /// The recordings in `dir` (created when the first one is saved).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// Saves an exchange, replacing an earlier recording of it; the file appears whole or not at
    /// all (written aside, then renamed).
    ///
    /// # Errors
    ///
    /// The folder or the file could not be written.
    pub fn save(&self, exchange: &Exchange) -> Result<PathBuf, RecordingError> {
        let key = key(
            &exchange.format,
            &exchange.model,
            exchange.repetition,
            &exchange.request,
        );
        let (body, body_base64) = match std::str::from_utf8(&exchange.body) {
            Ok(text) => (Some(text.to_owned()), None),
            Err(_) => (None, Some(BASE64_STANDARD.encode(&exchange.body))),
        };
        let file = File {
            recording_version: RECORDING_VERSION,
            key: key.clone(),
            format: exchange.format.clone(),
            model: exchange.model.clone(),
            repetition: exchange.repetition,
            request: exchange.request.clone(),
            status: exchange.status,
            body,
            body_base64,
        };
        let path = self.path(&key);
        let io = |e| RecordingError::Io(path.clone(), e);
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        let text = serde_json::to_vec_pretty(&file)
            .map_err(|e| RecordingError::Invalid(path.clone(), e.to_string()))?;
        let aside = self.dir.join(format!(".{key}.{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut out = std::fs::File::create(&aside)?;
            out.write_all(&text)?;
            out.write_all(b"\n")?;
            out.sync_all()?;
            std::fs::rename(&aside, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&aside);
            io(e)
        })?;
        Ok(path)
    }

    /// The recording of an exchange.
    ///
    /// # Errors
    ///
    /// [`RecordingError::Missing`] when there is none; a refused, unreadable or invalid file.
    pub fn load(
        &self,
        format: &str,
        model: &str,
        repetition: u32,
        request: &serde_json::Value,
    ) -> Result<Exchange, RecordingError> {
        let key = key(format, model, repetition, request);
        let path = self.path(&key);
        let metadata = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RecordingError::Missing {
                    key,
                    model: model.to_owned(),
                    repetition,
                });
            }
            Err(e) => return Err(RecordingError::Io(path, e)),
        };
        if !metadata.is_file() {
            return Err(RecordingError::Refused(path, "not a regular file".into()));
        }
        let mut bytes = Vec::new();
        std::fs::File::open(&path)
            .and_then(|f| f.take(MAX_RECORDING_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| RecordingError::Io(path.clone(), e))?;
        if bytes.len() as u64 > MAX_RECORDING_BYTES {
            return Err(RecordingError::Refused(
                path,
                format!("larger than {MAX_RECORDING_BYTES} bytes"),
            ));
        }
        let invalid = |why: String| RecordingError::Invalid(path.clone(), why);
        let file: File = serde_json::from_slice(&bytes).map_err(|e| invalid(e.to_string()))?;
        if file.recording_version != RECORDING_VERSION {
            return Err(invalid(format!(
                "recording_version {} is not {RECORDING_VERSION}",
                file.recording_version
            )));
        }
        let body = match (file.body, file.body_base64) {
            (Some(text), None) => text.into_bytes(),
            (None, Some(encoded)) => BASE64_STANDARD
                .decode(encoded.as_bytes())
                .map_err(|e| invalid(format!("body_base64: {e}")))?,
            _ => return Err(invalid("holds exactly one of body and body_base64".into())),
        };
        let exchange = Exchange {
            format: file.format,
            model: file.model,
            repetition: file.repetition,
            request: file.request,
            status: file.status,
            body,
        };
        // A file renamed, edited or colliding is not the exchange asked for.
        let holds = key_of(&exchange);
        if file.key != key || holds != key {
            return Err(invalid(
                "it does not hold the exchange its name promises".into(),
            ));
        }
        Ok(exchange)
    }
}

fn key_of(exchange: &Exchange) -> String {
    key(
        &exchange.format,
        &exchange.model,
        exchange.repetition,
        &exchange.request,
    )
}

/// An endpoint that records: every exchange the inner endpoint completes is saved before it is
/// answered. A call that produced no reply (an [`EndpointError`]) is not saved, so a replay
/// never holds half an answer; a reply of any status is, so a replay reproduces error rows too.
pub struct Recording {
    inner: Arc<dyn Endpoint>,
    recordings: Recordings,
    format: String,
    model: String,
}

impl Recording {
    /// Records the exchanges of `inner`, a `format` endpoint for `model` (the model name sent),
    /// in `recordings`.
    pub fn new(
        inner: Arc<dyn Endpoint>,
        recordings: Recordings,
        format: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            inner,
            recordings,
            format: format.into(),
            model: model.into(),
        }
    }
}

impl fmt::Debug for Recording {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("dir", &self.recordings.dir)
            .field("format", &self.format)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Endpoint for Recording {
    fn exchange<'a>(&'a self, call: Call<'a>) -> ReplyFuture<'a> {
        Box::pin(async move {
            let reply = self.inner.exchange(call).await?;
            let exchange = Exchange {
                format: self.format.clone(),
                model: self.model.clone(),
                repetition: call.repetition,
                request: call.body.clone(),
                status: reply.status,
                body: reply.body.clone(),
            };
            self.recordings
                .save(&exchange)
                .map_err(|e| EndpointError::new(EndpointErrorKind::Recording, e.to_string()))?;
            Ok(reply)
        })
    }
}

/// An endpoint that answers from recordings only: an exchange never recorded is a
/// [`EndpointErrorKind::MissingRecording`] error naming the model, the repetition and the key,
/// never a live call. Replayed replies carry no timing (`first_byte` none, `elapsed` zero) and
/// `attempts` 0: no call was made.
pub struct Replay {
    recordings: Recordings,
    format: String,
    model: String,
}

impl Replay {
    /// Replays the exchanges of a `format` endpoint for `model` (the model name sent) from
    /// `recordings`.
    pub fn new(
        recordings: Recordings,
        format: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            recordings,
            format: format.into(),
            model: model.into(),
        }
    }
}

impl fmt::Debug for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replay")
            .field("dir", &self.recordings.dir)
            .field("format", &self.format)
            .field("model", &self.model)
            .finish()
    }
}

impl Endpoint for Replay {
    fn exchange<'a>(&'a self, call: Call<'a>) -> ReplyFuture<'a> {
        let loaded = self
            .recordings
            .load(&self.format, &self.model, call.repetition, call.body);
        let reply = match loaded {
            Ok(exchange) => Ok(Reply {
                status: exchange.status,
                body: exchange.body,
                first_byte: None,
                elapsed: Duration::ZERO,
                attempts: 0,
            }),
            Err(error @ RecordingError::Missing { .. }) => Err(EndpointError::new(
                EndpointErrorKind::MissingRecording,
                error.to_string(),
            )),
            Err(error) => Err(EndpointError::new(
                EndpointErrorKind::Recording,
                error.to_string(),
            )),
        };
        Box::pin(std::future::ready(reply))
    }
}
