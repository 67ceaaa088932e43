//! `promptstack keys`: create, list and revoke the API keys of the store.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use promptstack_store::{
    ErrorKind, KeyId, KeyInfo, KeyName, Location, PageRequest, Role, Store, StoreConfig, Tenant,
};

use crate::exit::bad_input;

/// Create, list and revoke API keys.
///
/// Keys are stored only as hashes: `create` prints the key once, on stdout, and it cannot be
/// shown again. The store is an SQLite file under `--data` (default `promptstack-data/`), or
/// the PostgreSQL database given with `--database`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a key for a tenant (creating the tenant if needed) and print it on stdout.
    Create {
        #[command(flatten)]
        store: StoreArgs,
        /// The tenant's slug: lowercase letters, digits and '-'.
        #[arg(long)]
        tenant: String,
        /// What the key may do.
        #[arg(long, value_enum)]
        role: RoleArg,
        /// A name to recognise the key by in listings (one line, at most 100 characters).
        #[arg(long)]
        name: Option<String>,
        /// The most keys the tenant may have that are not revoked; at the quota, revoke one
        /// first.
        #[arg(long, value_name = "N", default_value_t = 100)]
        max_keys_per_tenant: usize,
    },
    /// List keys: id, tenant, role, name, creation and revocation times (never the secret).
    List {
        #[command(flatten)]
        store: StoreArgs,
        /// Only this tenant's keys.
        #[arg(long)]
        tenant: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key by id: it stops authenticating at once.
    Revoke {
        #[command(flatten)]
        store: StoreArgs,
        /// The key's id (the 16 hex digits after `psk_`).
        id: String,
    },
}

/// Where the store is: an SQLite file in a data directory, or a database URL.
#[derive(Debug, clap::Args)]
pub struct StoreArgs {
    /// The data directory; the SQLite file inside it is promptstack.db (created with mode 0600
    /// in a 0700 directory).
    #[arg(long, value_name = "DIR", conflicts_with = "database")]
    data: Option<PathBuf>,
    /// A database URL instead: postgres://… or sqlite:PATH.
    #[arg(long, value_name = "URL")]
    database: Option<String>,
}

impl StoreArgs {
    /// The store's location: `--database`, else the SQLite file under `--data`.
    ///
    /// # Errors
    ///
    /// Bad input for a malformed `--database`.
    pub fn location(&self) -> anyhow::Result<Location> {
        Ok(match (&self.database, &self.data) {
            (Some(url), _) => Location::parse(url).map_err(bad_input)?,
            (None, Some(dir)) => Location::data_dir(dir),
            (None, None) => Location::data_dir("promptstack-data"),
        })
    }

    /// Opens the store at `location`.
    pub async fn open(location: Location) -> anyhow::Result<Store> {
        StoreArgs::open_with(location, StoreConfig::default()).await
    }

    /// Opens the store at `location` with `config`.
    pub async fn open_with(location: Location, config: StoreConfig) -> anyhow::Result<Store> {
        Store::open_with(location.clone(), config)
            .await
            .map_err(store_error)
            .with_context(|| format!("cannot open the store at {location}"))
    }
}

/// The roles, as named on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum RoleArg {
    /// Everything, including moving `production`, writing settings and reading the audit log.
    Admin,
    /// Publish versions and move unprotected labels.
    Editor,
    /// Read and render.
    Viewer,
}

impl From<RoleArg> for Role {
    fn from(role: RoleArg) -> Role {
        match role {
            RoleArg::Admin => Role::Admin,
            RoleArg::Editor => Role::Editor,
            RoleArg::Viewer => Role::Viewer,
        }
    }
}

/// Store errors caused by the input (a bad name) are bad input; the rest are failures.
fn store_error(error: promptstack_store::Error) -> anyhow::Error {
    match error.kind() {
        ErrorKind::Invalid | ErrorKind::TooLarge | ErrorKind::Quota => bad_input(error),
        _ => anyhow::Error::new(error),
    }
}

/// Checks every argument before the store is opened, so refused input leaves nothing behind.
/// Values are validated here rather than by clap so that error messages quote them escaped:
/// a hostile argument cannot write control sequences to the terminal.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    match args.command {
        Command::Create {
            store,
            tenant,
            role,
            name,
            max_keys_per_tenant,
        } => {
            let location = store.location()?;
            let tenant = Tenant::parse(&tenant).map_err(bad_input)?;
            let name = name
                .map(|name| KeyName::parse(&name))
                .transpose()
                .map_err(bad_input)?;
            runtime.block_on(create(
                location,
                &tenant,
                role.into(),
                name.as_ref(),
                max_keys_per_tenant,
            ))
        }
        Command::List {
            store,
            tenant,
            json,
        } => {
            let location = store.location()?;
            let tenant = tenant
                .map(|tenant| Tenant::parse(&tenant))
                .transpose()
                .map_err(bad_input)?;
            runtime.block_on(list(location, tenant.as_ref(), json))
        }
        Command::Revoke { store, id } => {
            let location = store.location()?;
            let id = KeyId::parse(&id).map_err(bad_input)?;
            runtime.block_on(revoke(location, &id))
        }
    }
}

async fn create(
    location: Location,
    tenant: &Tenant,
    role: Role,
    name: Option<&KeyName>,
    max_keys: usize,
) -> anyhow::Result<ExitCode> {
    let defaults = StoreConfig::default();
    let config = defaults.clone().quotas(
        defaults.max_versions_per_agent,
        defaults.max_agents_per_tenant,
        max_keys,
        defaults.max_tenant_bytes,
    );
    let store = StoreArgs::open_with(location, config).await?;
    let created = store
        .create_key(tenant, role, name)
        .await
        .map_err(store_error)?;
    store.close().await;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", created.key.expose())?;
    stdout.flush()?;
    eprintln!(
        "created {role} key {} for tenant {tenant}; it is shown only this once",
        created.info.id
    );
    Ok(ExitCode::SUCCESS)
}

async fn list(location: Location, tenant: Option<&Tenant>, json: bool) -> anyhow::Result<ExitCode> {
    let store = StoreArgs::open(location).await?;
    let mut keys = Vec::new();
    let mut request = PageRequest::first().limit(store.config().max_page);
    loop {
        let page = match tenant {
            Some(tenant) => store.keys(tenant, &request).await,
            None => store.admin().keys(&request).await,
        }
        .map_err(store_error)?;
        keys.extend(page.items);
        match page.next {
            Some(next) => {
                request = PageRequest::first()
                    .limit(store.config().max_page)
                    .after(next)
            }
            None => break,
        }
    }
    store.close().await;
    let mut stdout = std::io::stdout().lock();
    if json {
        let rows: Vec<_> = keys.iter().map(key_json).collect();
        serde_json::to_writer_pretty(&mut stdout, &rows)?;
        writeln!(stdout)?;
    } else {
        write_table(&mut stdout, &keys)?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn revoke(location: Location, id: &KeyId) -> anyhow::Result<ExitCode> {
    let store = StoreArgs::open(location).await?;
    let (info, revoked) = store.admin().revoke_key(id).await.map_err(store_error)?;
    store.close().await;
    if revoked {
        println!("revoked key {id} of tenant {}", info.tenant);
    } else {
        println!(
            "key {id} of tenant {} was already revoked at {}",
            info.tenant,
            seconds(info.revoked_at)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A timestamp to the second, or `-`.
fn seconds(at: Option<jiff::Timestamp>) -> String {
    match at.and_then(|t| jiff::Timestamp::from_second(t.as_second()).ok()) {
        Some(t) => t.to_string(),
        None => "-".to_owned(),
    }
}

fn key_json(key: &KeyInfo) -> serde_json::Value {
    serde_json::json!({
        "id": key.id,
        "tenant": key.tenant,
        "role": key.role,
        "name": key.name,
        "created_at": key.created_at.to_string(),
        "revoked_at": key.revoked_at.map(|t| t.to_string()),
    })
}

fn write_table(out: &mut impl Write, keys: &[KeyInfo]) -> std::io::Result<()> {
    let header = ["ID", "TENANT", "ROLE", "NAME", "CREATED", "REVOKED"].map(str::to_owned);
    let rows: Vec<[String; 6]> = keys
        .iter()
        .map(|key| {
            [
                key.id.to_string(),
                key.tenant.to_string(),
                key.role.to_string(),
                key.name.clone().unwrap_or_else(|| "-".to_owned()),
                seconds(Some(key.created_at)),
                seconds(key.revoked_at),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', width - cell.chars().count() + 2));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}
