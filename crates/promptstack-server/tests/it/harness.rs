//! A router over a fresh SQLite store with two tenants, and request helpers.

use std::path::{Path, PathBuf};

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt as _;
use promptstack_server::{AppState, Bundle, ServerConfig};
use promptstack_store::{
    AgentName, CredentialKey, CredentialName, Location, Role, Secret, Store, StoreConfig, Tenant,
};
use tower::ServiceExt as _;

/// The repository's examples folder.
pub fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// An example's bundle.
pub fn bundle(name: &str) -> Bundle {
    Bundle::from_dir(
        &examples().join(name),
        &promptstack::limits::Limits::default(),
    )
    .expect("the example reads")
}

/// An example send as JSON.
pub fn send(agent: &str, send: &str) -> serde_json::Value {
    let path = examples()
        .join(agent)
        .join("sends")
        .join(format!("{send}.json"));
    serde_json::from_slice(&std::fs::read(path).expect("the send reads")).expect("JSON")
}

/// A server with tenant `acme` (chat-assistant and voice-platform in production) and tenant
/// `globex` (its own `secret-agent`), and a key of every role in each.
pub struct Harness {
    pub router: Router,
    pub acme: Keys,
    pub globex: Keys,
    pub globex_version: String,
    pub store: Store,
    pub state: AppState,
    _dir: tempfile::TempDir,
}

pub struct Keys {
    pub admin: String,
    pub editor: String,
    pub viewer: String,
}

/// The credentials key of [`Harness::new`].
pub const CREDENTIALS_KEY: [u8; 32] = [0x5a; 32];

/// The text only tenant `globex`'s agent holds: no answer to `acme` may contain it.
pub const GLOBEX_SECRET: &str = "globex-secret-instructions-7f3a";

impl Harness {
    pub async fn new() -> Harness {
        Harness::with_config(
            ServerConfig::default()
                .rate_limit(0, 1)
                .credentials_key(CredentialKey::from_bytes(&CREDENTIALS_KEY)),
        )
        .await
    }

    pub async fn with_config(config: ServerConfig) -> Harness {
        Harness::with_configs(config, StoreConfig::default()).await
    }

    pub async fn with_configs(config: ServerConfig, store_config: StoreConfig) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_with(Location::data_dir(dir.path()), store_config)
            .await
            .unwrap();
        let state = AppState::new(store.clone(), config);
        state.watch().await.unwrap();
        let acme = Tenant::parse("acme").unwrap();
        let globex = Tenant::parse("globex").unwrap();
        for agent in ["chat-assistant", "voice-platform"] {
            promptstack_server::publish_to_production(
                &state,
                &acme,
                &AgentName::parse(agent).unwrap(),
                &bundle(agent),
            )
            .await
            .unwrap();
        }
        let mut secret = bundle("title");
        secret.spec.push_str(&format!("\n# {GLOBEX_SECRET}\n"));
        let globex_version = promptstack_server::publish_to_production(
            &state,
            &globex,
            &AgentName::parse("secret-agent").unwrap(),
            &secret,
        )
        .await
        .unwrap()
        .0
        .to_string();
        let keys = |tenant: Tenant| {
            let store = store.clone();
            async move {
                let mut made = Vec::new();
                for role in [Role::Admin, Role::Editor, Role::Viewer] {
                    made.push(
                        store
                            .create_key(&tenant, role, None)
                            .await
                            .unwrap()
                            .key
                            .expose()
                            .to_owned(),
                    );
                }
                Keys {
                    admin: made[0].clone(),
                    editor: made[1].clone(),
                    viewer: made[2].clone(),
                }
            }
        };
        // Globex's provider credential, named like its agent, holding its secret.
        store
            .put_credential(
                &globex,
                &CredentialName::parse("secret-agent").unwrap(),
                &Secret::new(GLOBEX_SECRET),
                &CredentialKey::from_bytes(&CREDENTIALS_KEY),
                None,
            )
            .await
            .unwrap();
        Harness {
            router: promptstack_server::router(state.clone()),
            acme: keys(acme).await,
            globex: keys(globex).await,
            globex_version,
            store,
            state,
            _dir: dir,
        }
    }

    /// Sends a request; returns the status, headers and body.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<Vec<u8>>,
    ) -> Answer {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(key) = key {
            request = request.header("authorization", format!("Bearer {key}"));
        }
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let request = request
            .body(body.map_or_else(Body::empty, Body::from))
            .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec();
        Answer {
            status,
            headers,
            body: bytes,
        }
    }

    pub async fn json(
        &self,
        method: Method,
        path: &str,
        key: &str,
        body: serde_json::Value,
    ) -> Answer {
        self.call(
            method,
            path,
            Some(key),
            Some(serde_json::to_vec(&body).unwrap()),
        )
        .await
    }

    /// Sends a JSON body by `POST`.
    pub async fn post(&self, path: &str, key: &str, body: serde_json::Value) -> Answer {
        self.json(Method::POST, path, key, body).await
    }

    /// Sends a JSON body by `PUT`.
    pub async fn put(&self, path: &str, key: &str, body: serde_json::Value) -> Answer {
        self.json(Method::PUT, path, key, body).await
    }

    /// Reads `path` with `key`.
    pub async fn get(&self, path: &str, key: &str) -> Answer {
        self.call(Method::GET, path, Some(key), None).await
    }

    /// The tenant's audit entries, as `key` reads them.
    pub async fn audit(&self, key: &str) -> Vec<serde_json::Value> {
        let audit = self.get("/v1/audit", key).await;
        audit.assert_status(StatusCode::OK);
        match audit.json()["items"].take() {
            serde_json::Value::Array(items) => items,
            other => panic!("audit items are not an array: {other}"),
        }
    }
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts the answer's status, showing the body when it differs.
    pub fn assert_status(&self, status: StatusCode) {
        assert_eq!(self.status, status, "{}", self.text());
    }

    /// Asserts a problem document of `status` whose type ends in `/{kind}`, and returns it.
    pub fn problem_of(&self, status: StatusCode, kind: &str) -> serde_json::Value {
        let problem = self.problem(status);
        assert!(
            problem["type"]
                .as_str()
                .unwrap()
                .ends_with(&format!("/{kind}")),
            "{problem}"
        );
        problem
    }

    /// Asserts a problem document of `status`, and returns it.
    pub fn problem(&self, status: StatusCode) -> serde_json::Value {
        self.assert_status(status);
        assert_eq!(
            self.headers.get("content-type").unwrap(),
            "application/problem+json",
            "{}",
            self.text()
        );
        let problem = self.json();
        assert_eq!(problem["status"], status.as_u16());
        assert!(problem["type"].as_str().unwrap().starts_with("https://"));
        assert!(problem["title"].is_string());
        assert!(problem["detail"].is_string());
        problem
    }
}
