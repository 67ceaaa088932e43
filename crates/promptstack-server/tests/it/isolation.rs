//! Tenant isolation over the whole route table: every operation of the OpenAPI document is
//! called with tenant `acme`'s keys on tenant `globex`'s objects.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::harness::{GLOBEX_SECRET, Harness, bundle};

/// A valid body for each operation, by method and path template; an operation missing here
/// fails the walk, so a new route cannot skip it.
fn body_for(method: &Method, path: &str, globex_version: &str) -> Option<Option<Value>> {
    let send = json!({"user_message": "hello"});
    let body = match (method.as_str(), path) {
        ("GET" | "DELETE", _) => None,
        ("PUT", "/v1/credentials/{name}") => Some(json!({"value": "acme-own-value"})),
        ("POST", "/v1/agents/{name}/versions") => {
            Some(serde_json::to_value(bundle("title")).unwrap())
        }
        ("PUT", "/v1/agents/{name}/labels/{label}") => Some(json!({"version": globex_version})),
        ("PUT", "/v1/settings" | "/v1/agents/{name}/settings") => Some(json!({"document": {}})),
        (
            "POST",
            "/v1/agents/{name}/render"
            | "/v1/agents/{name}/request"
            | "/v1/agents/{name}/explain"
            | "/v1/agents/{name}/tools"
            | "/v1/agents/{name}/diff",
        ) => Some(json!({"ref": globex_version, "send": send})),
        ("POST", "/v1/agents/{name}/lint") => Some(json!({"ref": globex_version})),
        ("POST", "/v1/agents/{name}/evals") => {
            Some(json!({"suite": "evals/smoke.toml", "refs": [globex_version]}))
        }
        ("POST", "/v1/agents/{name}/cache-sim") => Some(json!({"ref": globex_version, "turns": 2})),
        ("POST", "/v1/fence") => Some(json!({"text": "x", "kind": "page"})),
        ("POST", "/v1/cite") => return Some(None),
        _ => return None,
    };
    Some(body)
}

#[tokio::test]
async fn no_route_lets_one_tenant_reach_another() {
    let h = Harness::new().await;
    // Globex's eval run, which no route may reach with Acme's keys.
    let globex = promptstack_store::Tenant::parse("globex").unwrap();
    let run = h
        .store
        .create_run(
            &globex,
            &promptstack_store::NewRun::new(
                promptstack_store::AgentName::parse("secret-agent").unwrap(),
                "evals/smoke.toml",
                vec![promptstack_store::RunRef {
                    reference: "production".into(),
                    version: promptstack_store::VersionId::parse(&h.globex_version).unwrap(),
                }],
                vec!["local".into()],
                vec!["one".into()],
                1,
            ),
            None,
        )
        .await
        .unwrap();
    let document = serde_json::to_value(promptstack_server::openapi()).unwrap();
    let paths = document["paths"].as_object().unwrap();
    let mut walked = 0;
    for (template, operations) in paths {
        for (method, _) in operations.as_object().unwrap() {
            let method: Method = method.to_uppercase().parse().unwrap();
            let body = body_for(&method, template, &h.globex_version).unwrap_or_else(|| {
                panic!("{method} {template} has no body in the isolation walk: add one")
            });
            let path = template
                .replace("{name}", "secret-agent")
                .replace("{version}", &h.globex_version)
                .replace("{label}", "production")
                .replace("{run}", run.id.as_str())
                .replace("{index}", "0");
            for key in [&h.acme.admin, &h.acme.editor, &h.acme.viewer] {
                let bytes = body.as_ref().map(|b| serde_json::to_vec(b).unwrap());
                let answer = h.call(method.clone(), &path, Some(key), bytes).await;
                let text = answer.text();
                assert!(!answer.status.is_server_error(), "{method} {path}: {text}");
                assert!(
                    !text.contains(GLOBEX_SECRET),
                    "{method} {path} leaked: {text}"
                );
                assert!(
                    !text.contains(&h.globex_version),
                    "{method} {path} leaked: {text}"
                );
                let publishes = method == Method::POST && template.ends_with("/versions");
                let credential = template == "/v1/credentials/{name}";
                if credential {
                    // Admin-only: other roles are refused before any lookup. An admin's delete
                    // finds no credential of that name in its own tenant (the walk deletes
                    // before it writes: the document's operations are ordered by method), and
                    // its write makes its own tenant's credential.
                    let expected = match (key == &h.acme.admin, method.as_str()) {
                        (false, _) => StatusCode::FORBIDDEN,
                        (true, "DELETE") => StatusCode::NOT_FOUND,
                        (true, _) => StatusCode::CREATED,
                    };
                    assert_eq!(answer.status, expected, "{method} {path}: {text}");
                } else if template.contains("{name}") && !publishes {
                    assert_eq!(
                        answer.status,
                        StatusCode::NOT_FOUND,
                        "{method} {path}: {text}"
                    );
                }
                if publishes {
                    // Publishing under the same name makes the key's own tenant's agent.
                    assert!(
                        matches!(
                            answer.status,
                            StatusCode::CREATED | StatusCode::OK | StatusCode::FORBIDDEN
                        ),
                        "{method} {path}: {text}"
                    );
                }
            }
            // The default reference (the `production` label) is isolated too.
            if let Some(mut body) = body.clone()
                && body.get("ref").is_some()
            {
                body.as_object_mut().unwrap().remove("ref");
                let answer = h
                    .call(
                        method.clone(),
                        &path,
                        Some(&h.acme.admin),
                        Some(serde_json::to_vec(&body).unwrap()),
                    )
                    .await;
                assert_eq!(
                    answer.status,
                    StatusCode::NOT_FOUND,
                    "{method} {path}: {}",
                    answer.text()
                );
            }
            walked += 1;
        }
    }
    assert!(walked >= 20, "only {walked} operations walked");
    // Globex's credential of the walked name is untouched, and Acme's own is separate.
    let credentials = h.get("/v1/credentials", &h.globex.admin).await.json();
    let items = credentials["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{credentials}");
    assert_eq!(items[0]["name"], "secret-agent");
    assert_eq!(
        items[0]["created_at"], items[0]["updated_at"],
        "{credentials}"
    );
    // Globex's run is untouched.
    let after = h.store.run(&globex, &run.id).await.unwrap();
    assert_eq!(after.state, promptstack_store::RunState::Queued);
    // Globex's objects are untouched.
    let versions = h
        .get("/v1/agents/secret-agent/versions", &h.globex.viewer)
        .await
        .json();
    assert_eq!(versions["items"].as_array().unwrap().len(), 1, "{versions}");
    let label = h
        .get("/v1/agents/secret-agent/labels", &h.globex.viewer)
        .await
        .json();
    assert_eq!(label[0]["version"], h.globex_version.as_str());
    let audit = h.audit(&h.globex.admin).await;
    assert!(
        audit
            .iter()
            .all(|e| e["action"] != "label.move" || e["actor"].is_null()),
        "{audit:?}"
    );
}
