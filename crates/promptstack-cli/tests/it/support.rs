//! What every end-to-end module shares: the workspace root and the binary run from it.

use std::path::{Path, PathBuf};
use std::process::Command;

use insta_cmd::get_cargo_bin;

/// The workspace root, so that paths in commands and snapshots are relative to it.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The binary, run from the workspace root.
pub fn promptstack() -> Command {
    let mut command = Command::new(get_cargo_bin("promptstack"));
    command.current_dir(root());
    command
}
