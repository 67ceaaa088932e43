//! The durability test's writer process: opens a store, makes writes, and prints a line after
//! each one is acknowledged, until it is killed (or its stdin closes, so it cannot outlive a
//! test that failed to kill it).
//!
//! Usage: `store-writer LOCATION TENANT`. Prints `acked label` after publishing a version and
//! pointing `production` at it, then `acked settings N` after writing revision N of the
//! tenant's settings, for N = 1, 2, … up to 10 000.

use std::io::{Read, Write};
use std::process::ExitCode;

use promptstack_store::{
    AgentName, Expected, LabelName, NewVersion, Role, SettingsScope, Store, Tenant, VersionId,
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [location, tenant] = args.as_slice() else {
        eprintln!("usage: store-writer LOCATION TENANT");
        return ExitCode::from(2);
    };
    std::thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        std::process::exit(0);
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    match runtime.block_on(write(location, tenant)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(1)
        }
    }
}

async fn write(location: &str, tenant: &str) -> promptstack_store::Result<()> {
    let store = Store::open(location).await?;
    let tenant = Tenant::parse(tenant)?;
    let key = store.create_key(&tenant, Role::Admin, None).await?;
    let by = Some(key.key.id());
    let agent = AgentName::parse("durable")?;
    let id = VersionId::parse(&"d".repeat(64))?;
    let version = NewVersion::new(id.clone(), "text/plain", b"kept".to_vec());
    store.publish(&tenant, &agent, &version, by).await?;
    let production = LabelName::parse("production")?;
    store
        .move_label(&tenant, &agent, &production, &id, &Expected::Absent, by)
        .await?;
    acked("acked label");
    for n in 1..=10_000u32 {
        let document = serde_json::json!({ "n": n });
        store
            .put_settings(&tenant, &SettingsScope::Tenant, &document, None, by)
            .await?;
        acked(&format!("acked settings {n}"));
    }
    Ok(())
}

/// Prints a line and flushes it: the line is the acknowledgement the test acts on.
fn acked(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}
