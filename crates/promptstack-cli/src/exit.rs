//! Exit codes and error reporting, in one place.

use std::process::ExitCode;

/// Marks an error as caused by bad input (exit code 2) rather than a failure (exit code 1).
#[derive(Debug)]
pub struct BadInput(pub anyhow::Error);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for BadInput {}

/// Wraps an error so that `main` exits with code 2.
pub fn bad_input(error: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(BadInput(error.into()))
}

/// Prints an error to stderr and maps the outcome to the process exit code.
///
/// Messages quote input (paths, keys, what a server wrote), so everything printed passes through
/// [`terminal_safe`](promptstack::diagnostic::terminal_safe): no control character reaches the
/// terminal raw.
pub fn report(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(error) => {
            if let Some(BadInput(inner)) = error.downcast_ref::<BadInput>() {
                // Spec and send errors carry their own `error[code]:` headers and locations.
                let message = match inner.downcast_ref::<promptstack::SpecError>() {
                    Some(spec) => spec.to_string(),
                    None => format!("error: {inner:#}"),
                };
                print_error(&message);
                ExitCode::from(2)
            } else {
                print_error(&format!("error: {error:#}"));
                ExitCode::from(1)
            }
        }
    }
}

/// Writes an error message to stderr, escaped; a closed stderr is ignored (the exit code still
/// tells).
fn print_error(message: &str) {
    use std::io::Write as _;
    let message = promptstack::diagnostic::terminal_safe(message);
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}
