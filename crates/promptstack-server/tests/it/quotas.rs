//! Per-tenant quotas over HTTP: each refuses the write past it with a clear problem and stores
//! nothing; the next tenant is not affected.

use axum::http::StatusCode;
use promptstack_server::ServerConfig;
use promptstack_store::StoreConfig;
use serde_json::json;

use crate::harness::{Answer, Harness, bundle};

const KIB: usize = 1024;

/// The chat assistant's bundle with a notes file of `bytes` bytes of `fill`.
fn with_notes(fill: char, bytes: usize) -> serde_json::Value {
    let mut value = serde_json::to_value(bundle("chat-assistant")).unwrap();
    value["files"]["notes.md"] = json!(fill.to_string().repeat(bytes));
    value
}

#[tokio::test]
async fn versions_agents_bundle_and_stored_bytes_are_bounded_per_tenant() {
    // Two versions per agent, four agents, bundles of 400 KiB, 1 MiB of versions per tenant.
    let h = Harness::with_configs(
        ServerConfig::default().rate_limit(0, 1),
        StoreConfig::default()
            .max_bundle_bytes(400 * KIB)
            .quotas(2, 4, 100, (1024 * KIB) as u64),
    )
    .await;
    let publish = |agent: &str, body: serde_json::Value| {
        let path = format!("/v1/agents/{agent}/versions");
        let key = h.acme.editor.clone();
        let h = &h;
        async move { h.post(&path, &key, body).await }
    };
    // Bundle bytes: 413.
    let problem = publish("chat-assistant", with_notes('a', 450 * KIB))
        .await
        .problem(StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        problem["detail"].as_str().unwrap().contains("the bundle"),
        "{problem}"
    );
    // Versions per agent: the second version fits, the third is 422.
    let second = publish("chat-assistant", with_notes('b', 300 * KIB)).await;
    second.assert_status(StatusCode::CREATED);
    assert_over_quota(
        &publish("chat-assistant", with_notes('c', 10)).await,
        "versions",
    );
    // Republishing an existing version is still answered.
    let again = publish("chat-assistant", with_notes('b', 300 * KIB)).await;
    again.assert_status(StatusCode::OK);
    // Agents per tenant: acme has two; two more fit, a fifth is 422.
    for agent in ["third", "fourth"] {
        let answer = publish(agent, with_notes('d', 10)).await;
        answer.assert_status(StatusCode::CREATED);
    }
    assert_over_quota(&publish("fifth", with_notes('e', 10)).await, "agents");
    let agents = h.get("/v1/agents", &h.acme.viewer).await.json();
    assert_eq!(agents["items"].as_array().unwrap().len(), 4);
    // Stored bytes: 300 KiB more fits once; the next 300 KiB passes 1 MiB: 413.
    let answer = publish("third", with_notes('f', 300 * KIB)).await;
    answer.assert_status(StatusCode::CREATED);
    let problem = publish("fourth", with_notes('g', 350 * KIB))
        .await
        .problem(StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        problem["detail"].as_str().unwrap().contains("quota"),
        "{problem}"
    );
    // Another tenant has quotas of its own.
    let answer = h
        .post(
            "/v1/agents/chat-assistant/versions",
            &h.globex.editor,
            with_notes('h', 300 * KIB),
        )
        .await;
    answer.assert_status(StatusCode::CREATED);
}

#[tokio::test]
async fn settings_bytes_are_bounded() {
    let h = Harness::with_configs(
        ServerConfig::default().rate_limit(0, 1),
        StoreConfig::default().max_settings_bytes(1024),
    )
    .await;
    let document = json!({"instructions": {"enabled": true, "text": "x".repeat(2000)}});
    h.put("/v1/settings", &h.acme.admin, json!({"document": document}))
        .await
        .problem(StatusCode::PAYLOAD_TOO_LARGE);
    let small = json!({"instructions": {"enabled": true, "text": "short"}});
    let answer = h
        .put("/v1/settings", &h.acme.admin, json!({"document": small}))
        .await;
    answer.assert_status(StatusCode::OK);
}

/// Asserts a 422 of the quota-exceeded type whose detail names `what`.
fn assert_over_quota(answer: &Answer, what: &str) {
    let problem = answer.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        problem["type"],
        "https://promptstack.dev/problems/quota-exceeded"
    );
    assert!(
        problem["detail"].as_str().unwrap().contains(what),
        "{problem}"
    );
}
