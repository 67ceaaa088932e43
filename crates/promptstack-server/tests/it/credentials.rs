//! Provider credentials over HTTP: admin-only, audited by name, and the value never in an
//! answer, a problem, the audit log or a log line; without a credentials key, a clear problem.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use axum::http::{Method, StatusCode};
use promptstack_server::ServerConfig;
use promptstack_store::{
    AgentName, CredentialKey, CredentialName, LabelName, NewRun, RunRef, Tenant,
};
use serde_json::json;

use crate::harness::{CREDENTIALS_KEY, Harness};

const VALUE: &str = "sk-ant-api03-credential-never-shown-9c1d";

/// Every event and span field logged while it is the thread's default subscriber, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<String>>);

struct Fields<'a>(&'a mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        let _ = write!(self.0, " {}={value}", field.name());
    }
}

impl tracing::Subscriber for Captured {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut log = self.0.lock().unwrap();
        let _ = write!(log, "\nspan {}", span.metadata().name());
        span.record(&mut Fields(&mut log));
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut Fields(&mut self.0.lock().unwrap()));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut log = self.0.lock().unwrap();
        let _ = write!(
            log,
            "\n{} {}",
            event.metadata().level(),
            event.metadata().target()
        );
        event.record(&mut Fields(&mut log));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test(flavor = "current_thread")]
async fn credentials_are_admin_only_and_never_shown() {
    let captured = Captured::default();
    let _logging = tracing::subscriber::set_default(captured.clone());
    let h = Harness::new().await;
    let mut texts = Vec::new();
    let admin = &h.acme.admin;
    let path = "/v1/credentials/anthropic";

    let created = h.put(path, admin, json!({"value": VALUE})).await;
    created.assert_status(StatusCode::CREATED);
    let view = created.json();
    assert_eq!(view["name"], "anthropic");
    assert!(view["last_used_at"].is_null());
    assert!(view.get("value").is_none());
    texts.push(created.text());
    let replaced = h.put(path, admin, json!({"value": VALUE})).await;
    replaced.assert_status(StatusCode::OK);
    texts.push(replaced.text());

    // Other roles are refused; so are bad names, bad and oversized bodies, none echoing the value.
    for key in [&h.acme.editor, &h.acme.viewer] {
        let answer = h.put(path, key, json!({"value": VALUE})).await;
        answer.problem(StatusCode::FORBIDDEN);
        texts.push(answer.text());
        let answer = h.get("/v1/credentials", key).await;
        answer.problem(StatusCode::FORBIDDEN);
        let answer = h.call(Method::DELETE, path, Some(key), None).await;
        answer.problem(StatusCode::FORBIDDEN);
    }
    let bad_name = h
        .put("/v1/credentials/Bad%20Name", admin, json!({"value": VALUE}))
        .await;
    bad_name.problem(StatusCode::UNPROCESSABLE_ENTITY);
    texts.push(bad_name.text());
    let extra = h
        .put(path, admin, json!({"value": VALUE, "other": VALUE}))
        .await;
    extra.problem(StatusCode::UNPROCESSABLE_ENTITY);
    texts.push(extra.text());
    let not_text = h.put(path, admin, json!({"value": [VALUE]})).await;
    not_text.problem(StatusCode::UNPROCESSABLE_ENTITY);
    texts.push(not_text.text());
    let broken = h
        .call(
            Method::PUT,
            path,
            Some(admin),
            Some(format!("{{\"value\": \"{VALUE}\"").into_bytes()),
        )
        .await;
    broken.problem(StatusCode::BAD_REQUEST);
    texts.push(broken.text());
    let empty = h.put(path, admin, json!({"value": ""})).await;
    empty.problem(StatusCode::UNPROCESSABLE_ENTITY);
    let huge = h
        .put(path, admin, json!({"value": VALUE.repeat(300)}))
        .await;
    huge.problem(StatusCode::PAYLOAD_TOO_LARGE);
    texts.push(huge.text());

    // Listing: names and times.
    let listed = h.get("/v1/credentials", admin).await;
    assert_eq!(listed.status, StatusCode::OK);
    let items = listed.json()["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["name"], "anthropic");
    texts.push(listed.text());

    // A run of the tenant reads the value back, sealed under the server's key.
    let tenant = Tenant::parse("acme").unwrap();
    let chat = AgentName::parse("chat-assistant").unwrap();
    let production = h
        .store
        .label(&tenant, &chat, &LabelName::parse("production").unwrap())
        .await
        .unwrap();
    let run = h
        .store
        .create_run(
            &tenant,
            &NewRun::new(
                chat,
                "evals/smoke.toml",
                vec![RunRef {
                    reference: "production".into(),
                    version: production.version,
                }],
                vec!["m".into()],
                vec!["s".into()],
                1,
            ),
            None,
        )
        .await
        .unwrap();
    let secret = h
        .store
        .use_credential(
            &tenant,
            &run.id,
            &CredentialName::parse("anthropic").unwrap(),
            &CredentialKey::from_bytes(&CREDENTIALS_KEY),
        )
        .await
        .unwrap();
    assert_eq!(secret.expose(), VALUE);
    let listed = h.get("/v1/credentials", admin).await;
    assert!(listed.json()["items"][0]["last_used_at"].is_string());
    texts.push(listed.text());

    // Deleting, then gone.
    let deleted = h.call(Method::DELETE, path, Some(admin), None).await;
    deleted.assert_status(StatusCode::NO_CONTENT);
    let again = h.call(Method::DELETE, path, Some(admin), None).await;
    again.problem(StatusCode::NOT_FOUND);

    // The audit log names the credential and nothing of its value.
    let audit = h.get("/v1/audit", admin).await;
    let entries = audit.json()["items"].as_array().unwrap().clone();
    let actions: Vec<_> = entries
        .iter()
        .filter(|e| e["object"] == "credentials/anthropic")
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        actions,
        ["credential.delete", "credential.write", "credential.write"]
    );
    texts.push(audit.text());

    for text in &texts {
        assert!(!text.contains(VALUE), "an answer shows the value: {text}");
        assert!(
            !text.contains("never-shown"),
            "an answer shows part of the value: {text}"
        );
    }
    let log = captured.0.lock().unwrap().clone();
    assert!(
        !log.contains("never-shown"),
        "the log shows the value: {log}"
    );
}

#[tokio::test]
async fn without_a_credentials_key_only_the_credentials_routes_refuse() {
    let h = Harness::with_config(ServerConfig::default().rate_limit(0, 1)).await;
    let admin = &h.acme.admin;
    let answers = [
        h.put("/v1/credentials/openai", admin, json!({"value": VALUE}))
            .await,
        h.get("/v1/credentials", admin).await,
        h.call(Method::DELETE, "/v1/credentials/openai", Some(admin), None)
            .await,
    ];
    for answer in answers {
        let problem = answer.problem_of(
            StatusCode::SERVICE_UNAVAILABLE,
            "credentials-not-configured",
        );
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains("PROMPTSTACK_CREDENTIALS_KEY")
        );
        assert!(!answer.text().contains(VALUE));
    }
    // Everything else works as before.
    let agents = h.get("/v1/agents", admin).await;
    agents.assert_status(StatusCode::OK);
    let ready = h.call(Method::GET, "/readyz", None, None).await;
    ready.assert_status(StatusCode::OK);
}
