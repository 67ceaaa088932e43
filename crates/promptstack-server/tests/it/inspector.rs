//! The inspector's routes: the embedded page, who a key is, and the cache simulation it charts.

use axum::http::{Method, StatusCode, header};
use serde_json::json;

use crate::harness::Harness;

#[tokio::test]
async fn the_page_and_its_files_are_served_without_a_key() {
    let h = Harness::new().await;
    let index = h.call(Method::GET, "/", None, None).await;
    assert_eq!(index.status, StatusCode::OK);
    assert_eq!(
        index.headers[header::CONTENT_TYPE],
        "text/html; charset=utf-8"
    );
    assert!(
        index
            .text()
            .contains("<script type=\"module\" src=\"/inspector/app.js\">")
    );
    assert!(
        index.headers[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .contains("default-src 'self'")
    );
    for asset in promptstack_inspector::ASSETS {
        let answer = h
            .call(
                Method::GET,
                &format!("/inspector/{}", asset.path),
                None,
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", asset.path);
        assert_eq!(answer.body, asset.bytes, "{}", asset.path);
    }
    let schema = h
        .call(Method::GET, "/inspector/send.schema.json", None, None)
        .await;
    assert!(schema.json()["properties"]["model"].is_object());
    for missing in [
        "/inspector/nope.js",
        "/inspector/../Cargo.toml",
        "/inspector/assets/app.js",
    ] {
        let answer = h.call(Method::GET, missing, None, None).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{missing}");
    }
}

#[tokio::test]
async fn me_names_the_tenant_and_role_of_the_key() {
    let h = Harness::new().await;
    for (key, role) in [(&h.acme.admin, "admin"), (&h.acme.viewer, "viewer")] {
        let answer = h.get("/v1/me", key).await;
        assert_eq!(answer.json(), json!({"tenant": "acme", "role": role}));
    }
    let anonymous = h.call(Method::GET, "/v1/me", None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn cache_sim_replays_the_bundles_sends() {
    let h = Harness::new().await;
    let answer = h
        .post("/v1/agents/chat-assistant/cache-sim",
            &h.acme.viewer,
            json!({"target": "cached", "provider": "anthropic", "model": "claude-sonnet-4-5", "turns": 6}),
        )
        .await;
    answer.assert_status(StatusCode::OK);
    let report = answer.json();
    assert_eq!(report["per_turn"].as_array().unwrap().len(), 6, "{report}");
    assert!(report["ours"]["relative_cost"].as_f64() < report["naive"]["relative_cost"].as_f64());
    for bad in [
        json!({"turns": 0}),
        json!({"turns": 2, "gap_seconds": 99_999_999}),
        json!({"turns": 2, "target": "cached", "mcp_failure_rate": 2.0}),
    ] {
        let answer = h
            .post(
                "/v1/agents/chat-assistant/cache-sim",
                &h.acme.viewer,
                bad.clone(),
            )
            .await;
        assert_eq!(
            answer.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}: {}",
            answer.text()
        );
    }
}
