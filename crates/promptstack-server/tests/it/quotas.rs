//! Per-tenant quotas over HTTP: each refuses the write past it with a clear problem and stores
//! nothing; the next tenant is not affected.

use axum::http::{Method, StatusCode};
use promptstack_server::ServerConfig;
use promptstack_store::StoreConfig;
use serde_json::json;

use crate::harness::{Harness, bundle};

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
        async move { h.json(Method::POST, &path, &key, body).await }
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
    assert_eq!(second.status, StatusCode::CREATED, "{}", second.text());
    let problem = publish("chat-assistant", with_notes('c', 10))
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        problem["type"],
        "https://promptstack.dev/problems/quota-exceeded"
    );
    assert!(
        problem["detail"].as_str().unwrap().contains("versions"),
        "{problem}"
    );
    // Republishing an existing version is still answered.
    let again = publish("chat-assistant", with_notes('b', 300 * KIB)).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.text());
    // Agents per tenant: acme has two; two more fit, a fifth is 422.
    for agent in ["third", "fourth"] {
        let answer = publish(agent, with_notes('d', 10)).await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    }
    let problem = publish("fifth", with_notes('e', 10))
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        problem["type"],
        "https://promptstack.dev/problems/quota-exceeded"
    );
    assert!(
        problem["detail"].as_str().unwrap().contains("agents"),
        "{problem}"
    );
    let agents = h
        .call(Method::GET, "/v1/agents", Some(&h.acme.viewer), None)
        .await
        .json();
    assert_eq!(agents["items"].as_array().unwrap().len(), 4);
    // Stored bytes: 300 KiB more fits once; the next 300 KiB passes 1 MiB: 413.
    let answer = publish("third", with_notes('f', 300 * KIB)).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
    let problem = publish("fourth", with_notes('g', 350 * KIB))
        .await
        .problem(StatusCode::PAYLOAD_TOO_LARGE);
    assert!(
        problem["detail"].as_str().unwrap().contains("quota"),
        "{problem}"
    );
    // Another tenant has quotas of its own.
    let answer = h
        .json(
            Method::POST,
            "/v1/agents/chat-assistant/versions",
            &h.globex.editor,
            with_notes('h', 300 * KIB),
        )
        .await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text());
}

#[tokio::test]
async fn settings_bytes_are_bounded() {
    let h = Harness::with_configs(
        ServerConfig::default().rate_limit(0, 1),
        StoreConfig::default().max_settings_bytes(1024),
    )
    .await;
    let document = json!({"instructions": {"enabled": true, "text": "x".repeat(2000)}});
    h.json(
        Method::PUT,
        "/v1/settings",
        &h.acme.admin,
        json!({"document": document}),
    )
    .await
    .problem(StatusCode::PAYLOAD_TOO_LARGE);
    let small = json!({"instructions": {"enabled": true, "text": "short"}});
    let answer = h
        .json(
            Method::PUT,
            "/v1/settings",
            &h.acme.admin,
            json!({"document": small}),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.text());
}
