//! The bounded reader on real special files and symlinks.

use std::path::{Path, PathBuf};

use promptstack::limits::{InputError, InputKind, Limit, Limits, read, read_within};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("limits")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn special_files_are_refused_without_blocking() {
    let dir = scratch("special");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let limits = Limits::default();
    for (path, found) in [
        (fifo.as_path(), "a FIFO (named pipe)"),
        (Path::new("/dev/zero"), "a character device"),
        (dir.as_path(), "a directory"),
    ] {
        match read(path, InputKind::Spec, &limits) {
            Err(InputError::NotAFile { found: f, .. }) => assert_eq!(f, found),
            other => panic!("{}: {other:?}", path.display()),
        }
    }
}

#[test]
fn sizes_are_capped_while_reading() {
    let dir = scratch("sizes");
    let path = dir.join("big.json");
    std::fs::write(&path, vec![b'a'; 3000]).unwrap();
    let mut limits = Limits::default();
    limits.set(Limit::SendBytes, 2048).unwrap();
    let error = read(&path, InputKind::Send, &limits).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "send context {} is larger than 2 KiB (the `send-bytes` limit)",
            path.display()
        )
    );
    // Context files are cut to their cap instead.
    limits.set(Limit::ContextFileBytes, 1000).unwrap();
    let cut = read_within(&path, &dir, InputKind::ContextFile, &limits).unwrap();
    assert_eq!(cut.len(), 1000);
    // At the cap exactly, the file is read whole.
    limits.set(Limit::SendBytes, 3000).unwrap();
    assert_eq!(read(&path, InputKind::Send, &limits).unwrap().len(), 3000);
}

#[test]
fn symlinks_may_not_leave_their_root() {
    let dir = scratch("links");
    std::fs::create_dir_all(dir.join("root/inner")).unwrap();
    std::fs::write(dir.join("root/inner/kept.md"), "kept").unwrap();
    std::fs::write(dir.join("secret.md"), "secret").unwrap();
    std::os::unix::fs::symlink("inner/kept.md", dir.join("root/inside.md")).unwrap();
    std::os::unix::fs::symlink(dir.join("secret.md"), dir.join("root/outside.md")).unwrap();
    std::os::unix::fs::symlink("../secret.md", dir.join("root/relative.md")).unwrap();
    let limits = Limits::default();
    let root = dir.join("root");
    let kind = InputKind::ContextFile;
    assert_eq!(
        read_within(&root.join("inside.md"), &root, kind, &limits).unwrap(),
        b"kept"
    );
    for name in ["outside.md", "relative.md"] {
        match read_within(&root.join(name), &root, kind, &limits) {
            Err(InputError::Escapes { target, .. }) => assert_eq!(target, dir.join("secret.md")),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn the_context_chain_refuses_escaping_and_special_files() {
    let dir = scratch("chain");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(dir.join("secret.md"), "secret").unwrap();
    std::os::unix::fs::symlink(dir.join("secret.md"), work.join("AGENTS.md")).unwrap();
    let limits = Limits::default();
    let error = promptstack::context_files::load_chain(None, &work, &limits).unwrap_err();
    assert!(
        error.to_string().contains("symlinks may not leave it"),
        "{error}"
    );
    std::fs::remove_file(work.join("AGENTS.md")).unwrap();
    mkfifo(&work.join("CLAUDE.md"));
    let error = promptstack::context_files::load_chain(None, &work, &limits).unwrap_err();
    assert!(error.to_string().contains("a FIFO"), "{error}");
}
