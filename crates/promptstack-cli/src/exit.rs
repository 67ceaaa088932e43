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
pub fn report(result: anyhow::Result<ExitCode>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(error) => {
            if let Some(BadInput(inner)) = error.downcast_ref::<BadInput>() {
                // Spec and send errors carry their own `error[code]:` headers and locations.
                match inner.downcast_ref::<promptstack::SpecError>() {
                    Some(spec) => eprintln!("{spec}"),
                    None => eprintln!("error: {inner:#}"),
                }
                ExitCode::from(2)
            } else {
                eprintln!("error: {error:#}");
                ExitCode::from(1)
            }
        }
    }
}
