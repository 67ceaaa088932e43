//! The store's one error type: a kind the server maps to an HTTP status, a lowercase message,
//! and the cause.
//!
//! Messages never carry SQL text, bound values or key material: database errors are described
//! by their class (and SQLSTATE or SQLite code), and the driver error kept as the source is one
//! whose `Display` is the database's own message, which names constraints, never values we bind
//! (the only secret-derived value we bind is a key's SHA-256, which does not authenticate).

use std::fmt;

/// What went wrong, broadly; each kind maps to one HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The object does not exist for this tenant (404). Another tenant's object is also
    /// `NotFound`: the store never tells the two apart.
    NotFound,
    /// A precondition failed: a label moved since it was read, a settings revision is stale, a
    /// version id already names different bytes (409).
    Conflict,
    /// The input is malformed: a bad name, slug, cursor, location or document (400/422).
    Invalid,
    /// The input is larger than the configured cap, or would bring what the tenant stores past
    /// its quota of bytes (413).
    TooLarge,
    /// A count quota of the tenant is reached: versions per agent, agents per tenant, keys per
    /// tenant (422). Nothing was written.
    Quota,
    /// The database cannot be reached or did not answer in time: the write was not
    /// acknowledged and may be retried (503).
    Unavailable,
    /// The database holds something this version of the store cannot read, or a migration
    /// failed (500).
    Internal,
}

impl ErrorKind {
    /// A short lowercase name, stable for logs and metrics labels.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "not_found",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Invalid => "invalid",
            ErrorKind::TooLarge => "too_large",
            ErrorKind::Quota => "quota",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Internal => "internal",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error of the store.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

/// The store's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A new error of `kind` with a lowercase `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// What went wrong, broadly.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    pub(crate) fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, message)
    }

    pub(crate) fn too_large(what: &str, size: usize, cap: usize) -> Self {
        Self::new(
            ErrorKind::TooLarge,
            format!("{what} is {size} bytes, over the cap of {cap} bytes"),
        )
    }

    pub(crate) fn quota(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Quota, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    pub(crate) fn timed_out(after: std::time::Duration) -> Self {
        Self::new(
            ErrorKind::Unavailable,
            format!("database did not answer within {} ms", after.as_millis()),
        )
    }
}

impl From<sqlx::Error> for Error {
    fn from(error: sqlx::Error) -> Self {
        let (kind, message) = classify(&error);
        Error::new(kind, message).with_source(error)
    }
}

impl From<sqlx::migrate::MigrateError> for Error {
    fn from(error: sqlx::migrate::MigrateError) -> Self {
        match error {
            sqlx::migrate::MigrateError::Execute(inner) => {
                let (kind, message) = classify(&inner);
                let kind = match kind {
                    ErrorKind::Unavailable => kind,
                    _ => ErrorKind::Internal,
                };
                Error::new(kind, format!("migration failed: {message}")).with_source(inner)
            }
            other => Error::internal("migration failed").with_source(other),
        }
    }
}

/// Sorts a driver error into a kind and a message that names no value.
fn classify(error: &sqlx::Error) -> (ErrorKind, String) {
    use sqlx::Error as E;
    match error {
        E::PoolTimedOut => (
            ErrorKind::Unavailable,
            "no database connection within the acquire timeout (the database is down, \
             unreachable, or every connection is busy)"
                .into(),
        ),
        E::PoolClosed => (ErrorKind::Unavailable, "the store is closed".into()),
        E::Io(io) => (
            ErrorKind::Unavailable,
            format!("cannot reach the database ({:?})", io.kind()),
        ),
        E::Tls(_) => (
            ErrorKind::Unavailable,
            "cannot reach the database (tls)".into(),
        ),
        E::Protocol(_) | E::WorkerCrashed => (
            ErrorKind::Unavailable,
            "the database connection broke".into(),
        ),
        E::Configuration(_) => (
            ErrorKind::Invalid,
            "the database location is malformed".into(),
        ),
        E::Database(db) => classify_database(db.as_ref()),
        E::RowNotFound => (ErrorKind::NotFound, "no such row".into()),
        E::ColumnDecode { .. } | E::Decode(_) | E::ColumnNotFound(_) | E::TypeNotFound { .. } => (
            ErrorKind::Internal,
            "the database holds a value the store cannot read".into(),
        ),
        _ => (ErrorKind::Internal, "database error".into()),
    }
}

fn classify_database(db: &(dyn sqlx::error::DatabaseError + 'static)) -> (ErrorKind, String) {
    let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
    if db.is_unique_violation() {
        return (
            ErrorKind::Conflict,
            "a concurrent write created the same object".into(),
        );
    }
    if db
        .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some()
    {
        // SQLSTATE classes: 08 connection exception, 28 authorisation refused, 53 insufficient
        // resources, 57 operator intervention (shutdown, statement timeout), 40 transaction
        // rollback (serialisation failure, deadlock), 3D the database does not exist; 55P03 lock
        // not available, 55000 the database does not accept connections now.
        let transient = ["08", "28", "53", "57", "40", "3D"]
            .iter()
            .any(|class| code.starts_with(class))
            || code == "55P03"
            || code == "55000";
        if transient {
            return (
                ErrorKind::Unavailable,
                format!("the database refused the operation (sqlstate {code})"),
            );
        }
        return (
            ErrorKind::Internal,
            format!("database error (sqlstate {code})"),
        );
    }
    // SQLite: the primary result code is the low byte of the extended code.
    let primary = code.parse::<i32>().map(|c| c & 0xff).unwrap_or(-1);
    match primary {
        // BUSY, LOCKED, IOERR, FULL, CANTOPEN, PROTOCOL
        5 | 6 | 10 | 13 | 14 | 15 => (
            ErrorKind::Unavailable,
            format!("the database file cannot be written now (sqlite code {code})"),
        ),
        _ => (
            ErrorKind::Internal,
            format!("database error (sqlite code {code})"),
        ),
    }
}
