//! `cargo tree` as the crates' dependency tests run it (included by path into each test binary).

use std::process::Command;

/// The normal (non-dev) dependency graph of `package` with `features`, resolved for that package
/// alone and read offline: one line per package, each written as `format` says (`{p}`, `{f}`),
/// after the `prefix` (`none` or `depth`).
pub fn cargo_tree(package: &str, prefix: &str, format: &str, features: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(["tree", "-p", package, "-e", "normal", "--prefix", prefix])
        .args(["--format", format, "--offline"])
        .args(features)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("cargo tree writes UTF-8")
}
