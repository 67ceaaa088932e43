//! Conformance cases of provider credentials: sealed at rest, never read back but by a run of
//! the same tenant, audited by name only, bounded.

use std::time::Duration;

use promptstack_store::{
    AuditAction, CredentialKey, CredentialName, ErrorKind, Location, NewRun, PageRequest, Secret,
    StoreConfig,
};

use crate::support::{Harness, agent, by, kind, one_version_run, principal, publish_all};

const SECRET: &str = "sk-live-0123456789-do-not-leak";

fn name(text: &str) -> CredentialName {
    CredentialName::parse(text).unwrap()
}

fn one_cell_run() -> NewRun {
    one_version_run("chat", 1, &["m"])
}

pub async fn credentials_are_sealed_and_used_only_by_own_runs(h: &Harness) {
    let store = h
        .open_with(StoreConfig::default().credential_quotas(2, 64))
        .await;
    let key = CredentialKey::from_bytes(&[3; 32]);
    let (a, _) = principal(&store, "cred-a").await;
    let (b, _) = principal(&store, "cred-b").await;
    for who in [&a, &b] {
        publish_all(&store, who, &agent("chat"), &[1]).await;
    }
    let t = &a.tenant;
    let openai = name("openai");
    let (written, created) = store
        .put_credential(t, &openai, &Secret::new(SECRET), &key, by(&a))
        .await
        .unwrap();
    assert!(created);
    assert_eq!(written.name, openai);
    assert!(written.last_used_at.is_none());
    let (replaced, created) = store
        .put_credential(
            t,
            &openai,
            &Secret::new(format!("{SECRET}-2")),
            &key,
            by(&a),
        )
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(replaced.created_at, written.created_at);
    assert!(replaced.updated_at >= written.updated_at);

    // Bounds: empty, too long, one name too many (replacing an existing one still passes).
    assert_eq!(
        kind(
            store
                .put_credential(t, &name("x"), &Secret::new(""), &key, None)
                .await
        ),
        ErrorKind::Invalid
    );
    assert_eq!(
        kind(
            store
                .put_credential(t, &name("x"), &Secret::new("v".repeat(65)), &key, None)
                .await
        ),
        ErrorKind::TooLarge
    );
    store
        .put_credential(t, &name("anthropic"), &Secret::new("a"), &key, None)
        .await
        .unwrap();
    assert_eq!(
        kind(
            store
                .put_credential(t, &name("third"), &Secret::new("c"), &key, None)
                .await
        ),
        ErrorKind::Quota
    );
    assert!(CredentialName::parse("Bad Name").is_err());

    // Listing: names and times only.
    let listed = store
        .credentials(t, &PageRequest::first().limit(1))
        .await
        .unwrap();
    assert_eq!(listed.items[0].name, name("anthropic"));
    let rest = store
        .credentials(t, &PageRequest::first().after(listed.next.clone().unwrap()))
        .await
        .unwrap();
    assert_eq!(rest.items[0].name, openai);
    assert!(rest.next.is_none());
    assert!(
        store
            .credentials(&b.tenant, &PageRequest::first())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // Used by a run of A: the latest value, and the use is stamped.
    let run = store.create_run(t, &one_cell_run(), by(&a)).await.unwrap();
    let secret = store
        .use_credential(t, &run.id, &openai, &key)
        .await
        .unwrap();
    assert_eq!(secret.expose(), format!("{SECRET}-2"));
    assert!(!format!("{secret:?}").contains(SECRET));
    let used = store.credentials(t, &PageRequest::first()).await.unwrap();
    assert!(
        used.items
            .iter()
            .find(|c| c.name == openai)
            .unwrap()
            .last_used_at
            .is_some()
    );
    // Under another key it does not open, and says so without the value.
    let error = store
        .use_credential(t, &run.id, &openai, &CredentialKey::from_bytes(&[4; 32]))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Internal);
    assert!(!error.to_string().contains(SECRET));

    // B can neither use A's credential through B's run nor through A's run, nor delete it.
    let b_run = store
        .create_run(&b.tenant, &one_cell_run(), by(&b))
        .await
        .unwrap();
    assert_eq!(
        kind(
            store
                .use_credential(&b.tenant, &b_run.id, &openai, &key)
                .await
        ),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(
            store
                .use_credential(&b.tenant, &run.id, &openai, &key)
                .await
        ),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(store.use_credential(t, &b_run.id, &openai, &key).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(store.delete_credential(&b.tenant, &openai, None).await),
        ErrorKind::NotFound
    );

    // A run that is over uses nothing.
    let claimed = store
        .claim_cell(t, &run.id, "w", Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    store
        .complete_cell(t, &claimed.claim, &serde_json::json!({}), false)
        .await
        .unwrap();
    assert_eq!(
        kind(store.use_credential(t, &run.id, &openai, &key).await),
        ErrorKind::Conflict
    );

    // Deleting: gone, then NotFound; audited by name only, the value nowhere.
    store.delete_credential(t, &openai, by(&a)).await.unwrap();
    assert_eq!(
        kind(store.delete_credential(t, &openai, by(&a)).await),
        ErrorKind::NotFound
    );
    let audit = store
        .audit(t, &PageRequest::first().limit(200))
        .await
        .unwrap()
        .items;
    let writes: Vec<_> = audit
        .iter()
        .filter(|e| e.action == AuditAction::CredentialWrite)
        .collect();
    assert_eq!(writes.len(), 3);
    let deletes: Vec<_> = audit
        .iter()
        .filter(|e| e.action == AuditAction::CredentialDelete)
        .collect();
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0].object, "credentials/openai");
    assert!(!format!("{audit:?}").contains("sk-live"), "{audit:?}");

    // At rest: nothing of the value in the database files.
    if let Location::Sqlite(path) = h.location() {
        store.close().await;
        let dir = path.parent().unwrap();
        for entry in std::fs::read_dir(dir).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            assert!(!bytes.windows(7).any(|w| w == b"sk-live"));
        }
    }
}
