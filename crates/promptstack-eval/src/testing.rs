//! Test support (feature `testing`): finding the local model on CPU that `scripts/test` starts,
//! for this crate's real-model tests and its consumers' live runs.

/// The environment variable holding the local model's base URL (`http://host:port/v1`).
pub const LOCAL_MODEL_ENV: &str = "PROMPTSTACK_LOCAL_MODEL_URL";

/// The base URL of the local model, or `None` when it was not started: the caller's test then
/// does not run, and a note on standard error says so, naming `what` did not run.
///
/// # Panics
///
/// When the URL is missing under CI (`CI` set): CI runs `scripts/test`, which always starts the
/// model, so there a missing URL is a broken setup, not a reason to pass.
pub fn local_model_url(what: &str) -> Option<String> {
    match std::env::var(LOCAL_MODEL_ENV) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "{LOCAL_MODEL_ENV} is not set under CI; scripts/test starts the local model and sets it"
            );
            eprintln!(
                "{what} did NOT RUN: {LOCAL_MODEL_ENV} is not set \
                 (scripts/test starts the model and sets it; by hand: scripts/local-model start)"
            );
            None
        }
    }
}
