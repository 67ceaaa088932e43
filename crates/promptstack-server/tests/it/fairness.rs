//! A tenant's share of the engine: its expensive work queues behind itself, then gets 429 with
//! `Retry-After`, while another tenant is served.

use axum::http::StatusCode;
use promptstack_server::ServerConfig;
use serde_json::json;

use crate::harness::{Harness, send};

/// A spec whose every render writes 60,000 characters one at a time, four times (volatile, so never cached).
fn expensive_spec() -> String {
    let mut spec = "spec_version = 1\nname = \"expensive\"\n\n[targets.system]\n\
                    system = [\"@volatile\"]\n"
        .to_owned();
    for i in 0..4 {
        spec.push_str(&format!(
            "\n[[blocks]]\nid = \"loop{i}\"\ntrust = \"author\"\nstability = \"volatile\"\n\
             template = '''{{% for c in \"x\" * 60000 %}}{{{{ c }}}}{{% endfor %}}'''\n"
        ));
    }
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_past_its_share_waits_then_gets_429_and_others_are_served() {
    // One run at a time per tenant, and a wait of 1 ms for it: concurrent expensive renders of
    // one tenant cannot all get a turn.
    let h = Harness::with_config(
        ServerConfig::default()
            .rate_limit(0, 1)
            .tenant_engine_share(1, std::time::Duration::from_millis(1)),
    )
    .await;
    let published = h
        .post(
            "/v1/agents/expensive/versions",
            &h.acme.editor,
            json!({"spec": expensive_spec()}),
        )
        .await;
    published.assert_status(StatusCode::CREATED);
    let version = published.json()["version"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let render = json!({"ref": version, "send": send("chat-assistant", "plain")});
    let acme = (0..6).map(|_| {
        h.post(
            "/v1/agents/expensive/render",
            &h.acme.viewer,
            render.clone(),
        )
    });
    let globex = h.post(
        "/v1/agents/secret-agent/render",
        &h.globex.viewer,
        json!({"send": send("chat-assistant", "plain")}),
    );
    let (acme, globex) = tokio::join!(futures::future::join_all(acme), globex);
    globex.assert_status(StatusCode::OK);
    let served = acme.iter().filter(|a| a.status == StatusCode::OK).count();
    let busy: Vec<_> = acme
        .iter()
        .filter(|a| a.status == StatusCode::TOO_MANY_REQUESTS)
        .collect();
    assert!(served >= 1, "one render of the tenant runs");
    assert_eq!(served + busy.len(), acme.len());
    assert!(
        !busy.is_empty(),
        "the tenant's other renders wait, then get 429"
    );
    for answer in busy {
        let problem = answer.problem(StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            problem["type"],
            "https://promptstack.dev/problems/tenant-busy"
        );
        assert_eq!(answer.headers["retry-after"], "1");
    }
}
