//! The tenant-instructions cache: fail open, TTL, single flight, hangs and recovery, on tokio's
//! paused clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use promptstack::context::TenantInstructions;
use promptstack::tenant::{
    CacheConfig, CachedInstructions, FileSource, MemorySource, SourceError,
    TenantInstructionsSource,
};

#[derive(Clone, Debug)]
enum Mode {
    Answer(&'static str),
    Fail,
    Hang,
    Slow(&'static str, Duration),
}

/// A source the test steers: answer, fail, hang or answer slowly, counting calls.
#[derive(Clone)]
struct Scripted {
    mode: Arc<Mutex<Mode>>,
    calls: Arc<AtomicUsize>,
}

impl Scripted {
    fn new(mode: Mode) -> Self {
        Self {
            mode: Arc::new(Mutex::new(mode)),
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

impl TenantInstructionsSource for Scripted {
    async fn fetch(&self, _tenant: &str) -> Result<TenantInstructions, SourceError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mode = self.mode.lock().unwrap().clone();
        let answer = |text: &str| TenantInstructions {
            enabled: true,
            text: text.to_owned(),
            unavailable: None,
        };
        match mode {
            Mode::Answer(text) => Ok(answer(text)),
            Mode::Fail => Err("connection refused".into()),
            Mode::Hang => std::future::pending().await,
            Mode::Slow(text, delay) => {
                tokio::time::sleep(delay).await;
                Ok(answer(text))
            }
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_source_fails_open_and_recovers_after_the_error_ttl() {
    let source = Scripted::new(Mode::Fail);
    let cache = CachedInstructions::new(source.clone());
    let got = cache.get("acme").await;
    assert!(!got.enabled && got.text.is_empty());
    assert!(
        got.unavailable
            .as_deref()
            .unwrap()
            .contains("connection refused")
    );
    // The failure is remembered briefly, so a failing source is not hammered.
    source.set(Mode::Answer("Be kind."));
    assert!(cache.get("acme").await.unavailable.is_some());
    assert_eq!(source.calls(), 1);
    tokio::time::advance(Duration::from_secs(5)).await;
    let got = cache.get("acme").await;
    assert_eq!(got.text, "Be kind.");
    assert!(got.unavailable.is_none());
    assert_eq!(source.calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_hanging_source_times_out_to_no_instructions_then_recovers() {
    let source = Scripted::new(Mode::Hang);
    let cache = CachedInstructions::new(source.clone());
    let started = tokio::time::Instant::now();
    let got = cache.get("acme").await;
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    assert!(
        got.unavailable
            .as_deref()
            .unwrap()
            .contains("did not answer within 2000 ms")
    );
    source.set(Mode::Answer("Recovered."));
    tokio::time::advance(Duration::from_secs(6)).await;
    assert_eq!(cache.get("acme").await.text, "Recovered.");
}

#[tokio::test(start_paused = true)]
async fn an_admin_edit_lands_after_the_ttl_without_a_restart() {
    let source = Scripted::new(Mode::Answer("v1"));
    let cache = CachedInstructions::new(source.clone());
    assert_eq!(cache.get("acme").await.text, "v1");
    source.set(Mode::Answer("v2"));
    tokio::time::advance(Duration::from_secs(59)).await;
    assert_eq!(cache.get("acme").await.text, "v1");
    assert_eq!(source.calls(), 1);
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(cache.get("acme").await.text, "v2");
    assert_eq!(source.calls(), 2);
    // Tenants are cached separately.
    assert_eq!(cache.get("globex").await.text, "v2");
    assert_eq!(source.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn the_ttl_is_configurable() {
    let source = Scripted::new(Mode::Answer("v1"));
    let config = CacheConfig {
        ttl: Duration::from_secs(10),
        ..CacheConfig::default()
    };
    let cache = CachedInstructions::with_config(source.clone(), config);
    cache.get("acme").await;
    source.set(Mode::Answer("v2"));
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(cache.get("acme").await.text, "v2");
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_after_expiry_share_one_read() {
    let source = Scripted::new(Mode::Slow("v1", Duration::from_millis(300)));
    let cache = Arc::new(CachedInstructions::new(source.clone()));
    let herd = |cache: Arc<CachedInstructions<Scripted>>| {
        futures::future::join_all((0..64).map(move |_| {
            let cache = Arc::clone(&cache);
            async move { cache.get("acme").await }
        }))
    };
    let first = herd(Arc::clone(&cache)).await;
    assert!(first.iter().all(|g| g.text == "v1"));
    assert_eq!(source.calls(), 1);
    source.set(Mode::Slow("v2", Duration::from_millis(300)));
    tokio::time::advance(Duration::from_secs(61)).await;
    let second = herd(Arc::clone(&cache)).await;
    assert!(second.iter().all(|g| g.text == "v2"));
    assert_eq!(source.calls(), 2);
    assert_eq!(cache.source_reads(), 2);
}

#[tokio::test(start_paused = true)]
async fn concurrent_callers_share_one_failure_too() {
    let source = Scripted::new(Mode::Hang);
    let cache = Arc::new(CachedInstructions::new(source.clone()));
    let all = futures::future::join_all((0..16).map(|_| {
        let cache = Arc::clone(&cache);
        async move { cache.get("acme").await }
    }))
    .await;
    assert!(all.iter().all(|g| g.unavailable.is_some()));
    assert_eq!(source.calls(), 1);
}

#[tokio::test]
async fn the_memory_source_answers_what_was_set() {
    let source = MemorySource::new();
    assert_eq!(
        source.fetch("acme").await.unwrap(),
        TenantInstructions::default()
    );
    source.set("acme", true, "Hello.");
    let got = source.fetch("acme").await.unwrap();
    assert!(got.enabled);
    assert_eq!(got.text, "Hello.");
}

#[tokio::test]
async fn the_file_source_reads_one_json_file_per_tenant() {
    let dir = std::env::temp_dir().join(format!("promptstack-tenant-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("acme.json"),
        r#"{"enabled": true, "text": "From disk."}"#,
    )
    .unwrap();
    std::fs::write(dir.join("broken.json"), "{not json").unwrap();
    let source = FileSource::new(&dir);
    let got = source.fetch("acme").await.unwrap();
    assert_eq!((got.enabled, got.text.as_str()), (true, "From disk."));
    assert_eq!(
        source.fetch("nobody").await.unwrap(),
        TenantInstructions::default()
    );
    assert!(source.fetch("broken").await.is_err());
    assert!(source.fetch("../acme").await.is_err());
    // Behind the cache, a broken file fails open.
    let cache = CachedInstructions::new(FileSource::new(&dir));
    assert!(cache.get("broken").await.unavailable.is_some());
    // An edit on disk lands after the TTL (here zero).
    let cache = CachedInstructions::with_config(
        FileSource::new(&dir),
        CacheConfig {
            ttl: Duration::ZERO,
            ..CacheConfig::default()
        },
    );
    assert_eq!(cache.get("acme").await.text, "From disk.");
    std::fs::write(
        dir.join("acme.json"),
        r#"{"enabled": true, "text": "Edited."}"#,
    )
    .unwrap();
    assert_eq!(cache.get("acme").await.text, "Edited.");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tenant file that is a FIFO, a symlink out of the folder, or over its cap is a failed read
/// at once: no reading thread is left waiting on a FIFO, nothing outside the folder is read.
#[tokio::test]
async fn the_file_source_reads_only_bounded_regular_files_in_its_folder() {
    let base =
        std::env::temp_dir().join(format!("promptstack-tenant-hostile-{}", std::process::id()));
    let dir = base.join("tenants");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        base.join("other.json"),
        r#"{"enabled": true, "text": "Not yours."}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(base.join("other.json"), dir.join("linked.json")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("piped.json"))
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(
        dir.join("big.json"),
        format!(r#"{{"enabled": true, "text": "{}"}}"#, "a".repeat(4096)),
    )
    .unwrap();
    let mut limits = promptstack::limits::Limits::default();
    limits
        .set(promptstack::limits::Limit::TenantBytes, 1024)
        .unwrap();
    let source = FileSource::new(&dir).with_limits(limits);
    for (tenant, why) in [
        ("linked", "symlinks may not leave it"),
        ("piped", "a FIFO"),
        ("big", "larger than 1 KiB"),
    ] {
        let error = source.fetch(tenant).await.unwrap_err().to_string();
        assert!(error.contains(why), "{tenant}: {error}");
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_send_with_a_failed_source_still_assembles_with_a_warning() {
    let spec = r#"
spec_version = 1
name = "s"
[[blocks]]
id = "a"
trust = "author"
stability = "stable"
text = "Hello."
[stage]
capabilities = ["end_session"]
[targets.main]
system = ["@body"]
"#;
    let agent =
        promptstack::Agent::from_source(spec.as_bytes(), "s.toml", promptstack::SpecFormat::Toml)
            .unwrap();
    let mut ctx = promptstack::SendContext::from_json(
        br#"{"now": "2026-11-30T09:00:00Z", "model": {"id": "m", "name": "M", "provider": "p"}}"#,
        "send.json",
    )
    .unwrap();
    let cache = CachedInstructions::new(Scripted::new(Mode::Fail));
    cache.resolve("acme", &mut ctx).await;
    let assembly = agent.assemble(&ctx).unwrap();
    assert!(!assembly.block("tenant_instructions").unwrap().is_included());
    assert!(
        assembly
            .diagnostics()
            .any(|d| d.code == "tenant-instructions-unavailable")
    );
    assert!(
        assembly
            .compose("main")
            .unwrap()
            .system
            .starts_with("Hello.")
    );
}
