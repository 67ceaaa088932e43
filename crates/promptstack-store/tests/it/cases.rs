//! The conformance cases. Each takes a [`Harness`] and must hold on every backend.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use promptstack_store::{
    AuditAction, Backend, ChangeKind, Cursor, ErrorKind, Expected, Gap, LabelName, Location,
    NewVersion, Notification, PageRequest, Role, SettingsScope, Store, StoreConfig, Subscription,
    Tenant, VersionId,
};
use serde_json::json;

pub use crate::credentials::credentials_are_sealed_and_used_only_by_own_runs;
pub use crate::runs::{
    eval_cells_are_claimed_again_after_their_lease, eval_run_quotas_and_validation,
    eval_runs_are_isolated_by_tenant, eval_runs_cancel_and_fail,
    eval_runs_claim_and_complete_every_cell,
};
use crate::support::{
    Harness, agent, bundle, by, kind, label, principal, publish_all, tenant, vid,
};

/// How long a change may take to reach another instance's subscription: the consistency the
/// product promises across instances, not a performance figure.
const DELIVERY: Duration = Duration::from_secs(1);

pub async fn open_migrates_and_reopens(h: &Harness) {
    let store = h.open().await;
    let expected = if h.is_postgres() {
        Backend::Postgres
    } else {
        Backend::Sqlite
    };
    assert_eq!(store.backend(), expected);
    store.ping().await.unwrap();
    let (who, key) = principal(&store, "reopen").await;
    store.close().await;
    assert_eq!(kind(store.ping().await), ErrorKind::Unavailable);
    // Migrations already applied are skipped; the data is still there.
    let again = h.open().await;
    assert_eq!(again.authenticate(&key).await.unwrap(), Some(who));
}

pub async fn publish_is_idempotent(h: &Harness) {
    let store = h.open().await;
    let (who, _) = principal(&store, "publish").await;
    let chat = agent("chat");
    let version = bundle(1).warnings(json!([{"code": "lint", "message": "long block"}]));
    let first = store
        .publish(&who.tenant, &chat, &version, by(&who))
        .await
        .unwrap();
    assert!(first.created);
    assert_eq!(first.version.id, vid(1));
    assert_eq!(first.version.size, 7);
    assert_eq!(first.version.created_by.as_ref(), Some(&who.key_id));
    let second = store
        .publish(&who.tenant, &chat, &version, by(&who))
        .await
        .unwrap();
    assert!(!second.created);
    assert_eq!(second.version, first.version);

    // The same id naming other bytes is refused.
    let forged = NewVersion::new(vid(1), "application/json", b"{\"n\":2}".to_vec());
    assert_eq!(
        kind(store.publish(&who.tenant, &chat, &forged, by(&who)).await),
        ErrorKind::Conflict
    );

    let listed = store
        .versions(&who.tenant, &chat, &PageRequest::first())
        .await
        .unwrap();
    assert_eq!(listed.items, vec![first.version.clone()]);
    let stored = store.version(&who.tenant, &chat, &vid(1)).await.unwrap();
    assert_eq!(stored.bundle, b"{\"n\":1}");
    assert_eq!(stored.info, first.version);
    let publishes = audit_of(&store, &who.tenant, AuditAction::Publish).await;
    assert_eq!(publishes.len(), 1, "{publishes:?}");
}

pub async fn publish_validates_its_input(h: &Harness) {
    let store = h
        .open_with(
            StoreConfig::default()
                .max_bundle_bytes(16)
                .max_warnings_bytes(32),
        )
        .await;
    let (who, _) = principal(&store, "validate").await;
    let chat = agent("chat");
    let big = NewVersion::new(vid(1), "text/plain", vec![b'x'; 17]);
    assert_eq!(
        kind(store.publish(&who.tenant, &chat, &big, None).await),
        ErrorKind::TooLarge
    );
    let noisy = bundle(1).warnings(json!(["x".repeat(40)]));
    assert_eq!(
        kind(store.publish(&who.tenant, &chat, &noisy, None).await),
        ErrorKind::TooLarge
    );
    for content_type in ["", "text/plain\n", &"x".repeat(256)] {
        let version = NewVersion::new(vid(1), content_type, b"{}".to_vec());
        assert_eq!(
            kind(store.publish(&who.tenant, &chat, &version, None).await),
            ErrorKind::Invalid,
            "{content_type:?}"
        );
    }
    let nobody = tenant("nobody");
    assert_eq!(
        kind(store.publish(&nobody, &chat, &bundle(1), None).await),
        ErrorKind::NotFound
    );
    // Nothing was stored by the refused publishes.
    assert_eq!(
        kind(
            store
                .versions(&who.tenant, &chat, &PageRequest::first())
                .await
        ),
        ErrorKind::NotFound
    );
}

pub async fn versions_paginate_newest_first(h: &Harness) {
    let store = h.open().await;
    let (who, _) = principal(&store, "pages").await;
    let chat = agent("chat");
    publish_all(&store, &who, &chat, &[1, 2, 3, 4, 5, 6, 7]).await;
    let mut seen = Vec::new();
    let mut request = PageRequest::first().limit(3);
    let mut lengths = Vec::new();
    loop {
        let page = store.versions(&who.tenant, &chat, &request).await.unwrap();
        lengths.push(page.items.len());
        seen.extend(page.items.iter().map(|v| v.id.clone()));
        match page.next {
            Some(next) => request = PageRequest::first().limit(3).after(next),
            None => break,
        }
    }
    assert_eq!(lengths, [3, 3, 1]);
    assert_eq!(seen, [7, 6, 5, 4, 3, 2, 1].map(vid));
    // A page that ends exactly at the last item says there is no next page.
    let exact = store
        .versions(&who.tenant, &chat, &PageRequest::first().limit(7))
        .await
        .unwrap();
    assert_eq!((exact.items.len(), exact.next), (7, None));
}

pub async fn agents_paginate_by_name(h: &Harness) {
    let store = h.open().await;
    let (who, _) = principal(&store, "agents").await;
    for name in ["zeta", "alpha", "mid-1", "mid.2", "mid_3", "beta"] {
        publish_all(&store, &who, &agent(name), &[1]).await;
    }
    let mut names = Vec::new();
    let mut request = PageRequest::first().limit(4);
    loop {
        let page = store.agents(&who.tenant, &request).await.unwrap();
        names.extend(page.items.iter().map(|a| a.name.to_string()));
        match page.next {
            Some(next) => request = PageRequest::first().limit(4).after(next),
            None => break,
        }
    }
    // Bytewise order on both backends.
    assert_eq!(names, ["alpha", "beta", "mid-1", "mid.2", "mid_3", "zeta"]);
}

pub async fn pagination_is_bounded(h: &Harness) {
    let store = h.open_with(StoreConfig::default().pages(2, 5)).await;
    let (who, _) = principal(&store, "bounds").await;
    let chat = agent("chat");
    publish_all(&store, &who, &chat, &[1, 2, 3, 4, 5, 6, 7, 8]).await;
    let page = |request: PageRequest| {
        let store = store.clone();
        let tenant = who.tenant.clone();
        let chat = chat.clone();
        async move { store.versions(&tenant, &chat, &request).await }
    };
    assert_eq!(page(PageRequest::first()).await.unwrap().items.len(), 2);
    assert_eq!(
        page(PageRequest::first().limit(1_000_000))
            .await
            .unwrap()
            .items
            .len(),
        5
    );
    assert_eq!(
        page(PageRequest::first().limit(0))
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    for bad in ["x", "-1", "0", "99999999999999999999999"] {
        let cursor = Cursor::parse(bad).unwrap();
        assert_eq!(
            kind(page(PageRequest::first().after(cursor)).await),
            ErrorKind::Invalid,
            "{bad}"
        );
    }
    assert!(Cursor::parse("").is_err());
    assert!(Cursor::parse(&"1".repeat(129)).is_err());
    // An agent-name cursor in a listing of sequence numbers is malformed, and the reverse.
    let agents_cursor = Cursor::parse("chat").unwrap();
    assert_eq!(
        kind(page(PageRequest::first().after(agents_cursor)).await),
        ErrorKind::Invalid
    );
    let seq_cursor = Cursor::parse("-").unwrap();
    assert_eq!(
        kind(
            store
                .agents(&who.tenant, &PageRequest::first().after(seq_cursor))
                .await
        ),
        ErrorKind::Invalid
    );
    // Audit and key listings obey the same bounds.
    let audit = store
        .audit(&who.tenant, &PageRequest::first().limit(1000))
        .await
        .unwrap();
    assert_eq!(audit.items.len(), 5);
    assert!(audit.next.is_some());
}

pub async fn label_moves_compare_and_set(h: &Harness) {
    let store = h.open().await;
    let (who, _) = principal(&store, "labels").await;
    let (t, chat, prod) = (&who.tenant, agent("chat"), label("production"));
    publish_all(&store, &who, &chat, &[1, 2, 3]).await;

    let created = store
        .move_label(t, &chat, &prod, &vid(1), &Expected::Absent, by(&who))
        .await
        .unwrap();
    assert!(created.changed);
    assert_eq!(created.from, None);
    assert_eq!(created.label.version, vid(1));
    assert_eq!(
        kind(
            store
                .move_label(t, &chat, &prod, &vid(2), &Expected::Absent, by(&who))
                .await
        ),
        ErrorKind::Conflict
    );
    assert_eq!(
        kind(
            store
                .move_label(t, &chat, &prod, &vid(2), &Expected::Version(vid(3)), None)
                .await
        ),
        ErrorKind::Conflict
    );
    let moved = store
        .move_label(
            t,
            &chat,
            &prod,
            &vid(2),
            &Expected::Version(vid(1)),
            by(&who),
        )
        .await
        .unwrap();
    assert_eq!((moved.from, moved.changed), (Some(vid(1)), true));
    let any = store
        .move_label(t, &chat, &prod, &vid(3), &Expected::Any, None)
        .await
        .unwrap();
    assert_eq!(any.from, Some(vid(2)));
    assert_eq!(any.label.updated_by, None);
    // Expecting a version of a label that does not exist is a conflict too.
    assert_eq!(
        kind(
            store
                .move_label(
                    t,
                    &chat,
                    &label("staging"),
                    &vid(1),
                    &Expected::Version(vid(1)),
                    None
                )
                .await
        ),
        ErrorKind::Conflict
    );
    // A move to where the label already points changes nothing and is not audited.
    let same = store
        .move_label(t, &chat, &prod, &vid(3), &Expected::Any, by(&who))
        .await
        .unwrap();
    assert!(!same.changed);
    assert_eq!(same.label, any.label);
    let moves = audit_of(&store, t, AuditAction::LabelMove).await;
    assert_eq!(moves.len(), 3);

    assert_eq!(
        kind(
            store
                .move_label(t, &chat, &prod, &vid(9), &Expected::Any, None)
                .await
        ),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(
            store
                .move_label(t, &agent("other"), &prod, &vid(1), &Expected::Any, None)
                .await
        ),
        ErrorKind::NotFound
    );
    let current = store.label(t, &chat, &prod).await.unwrap();
    assert_eq!(current.version, vid(3));
    assert_eq!(store.labels(t, &chat).await.unwrap(), vec![current]);
    assert_eq!(
        kind(store.label(t, &chat, &label("staging")).await),
        ErrorKind::NotFound
    );
}

pub async fn forced_moves_are_audited_with_their_note(h: &Harness) {
    let store = h.open().await;
    let (who, _) = principal(&store, "forced").await;
    let (t, chat, prod) = (&who.tenant, agent("chat"), label("production"));
    publish_all(&store, &who, &chat, &[1, 2]).await;
    store
        .move_label(t, &chat, &prod, &vid(1), &Expected::Absent, by(&who))
        .await
        .unwrap();
    // An empty note, or one past the bound, is refused and moves nothing.
    let long = "x".repeat(promptstack_store::MAX_FORCE_NOTE + 1);
    for note in [" ", long.as_str()] {
        assert_eq!(
            kind(
                store
                    .force_label(t, &chat, &prod, &vid(2), &Expected::Any, by(&who), note)
                    .await
            ),
            ErrorKind::Invalid
        );
    }
    // A failed compare-and-set records neither the move nor the note.
    assert_eq!(
        kind(
            store
                .force_label(
                    t,
                    &chat,
                    &prod,
                    &vid(2),
                    &Expected::Version(vid(2)),
                    by(&who),
                    "{}"
                )
                .await
        ),
        ErrorKind::Conflict
    );
    assert!(
        audit_of(&store, t, AuditAction::LabelForce)
            .await
            .is_empty()
    );
    let note = r#"{"reason":"hotfix"}"#;
    let moved = store
        .force_label(
            t,
            &chat,
            &prod,
            &vid(2),
            &Expected::Version(vid(1)),
            by(&who),
            note,
        )
        .await
        .unwrap();
    assert_eq!((moved.from, moved.changed), (Some(vid(1)), true));
    let forced = audit_of(&store, t, AuditAction::LabelForce).await;
    assert_eq!(forced.len(), 1);
    assert_eq!(forced[0].object, "agents/chat/labels/production");
    assert_eq!(forced[0].from, Some(vid(1).to_string()));
    assert_eq!(forced[0].to.as_deref(), Some(note));
    assert_eq!(forced[0].actor, Some(who.key_id.clone()));
    let moves = audit_of(&store, t, AuditAction::LabelMove).await;
    assert!(moves.iter().any(|e| e.to == Some(vid(2).to_string())));
    assert_eq!(forced[0].at, moves[0].at, "one transaction, one time");
}

pub async fn label_count_is_capped(h: &Harness) {
    let store = h
        .open_with(StoreConfig::default().max_labels_per_agent(2))
        .await;
    let (who, _) = principal(&store, "cap").await;
    let chat = agent("chat");
    publish_all(&store, &who, &chat, &[1]).await;
    for name in ["a", "b"] {
        store
            .move_label(
                &who.tenant,
                &chat,
                &label(name),
                &vid(1),
                &Expected::Any,
                None,
            )
            .await
            .unwrap();
    }
    assert_eq!(
        kind(
            store
                .move_label(
                    &who.tenant,
                    &chat,
                    &label("c"),
                    &vid(1),
                    &Expected::Any,
                    None
                )
                .await
        ),
        ErrorKind::Invalid
    );
    // Moving an existing label is still allowed.
    publish_all(&store, &who, &chat, &[2]).await;
    store
        .move_label(
            &who.tenant,
            &chat,
            &label("a"),
            &vid(2),
            &Expected::Any,
            None,
        )
        .await
        .unwrap();
}

/// Each tenant quota refuses the write past it, writes nothing, and leaves republishing and other
/// tenants alone.
pub async fn tenant_quotas_refuse_past_them(h: &Harness) {
    // Two versions per agent, two agents, two keys, and 40 bytes of versions (each is 7 or 8).
    let store = h
        .open_with(StoreConfig::default().quotas(2, 2, 2, 40))
        .await;
    let (who, _) = principal(&store, "quota").await;
    let t = &who.tenant;
    let chat = agent("chat");
    publish_all(&store, &who, &chat, &[1, 2]).await;
    let third = store.publish(t, &chat, &bundle(3), by(&who)).await;
    assert_eq!(kind(third), ErrorKind::Quota);
    assert_eq!(
        store
            .versions(t, &chat, &PageRequest::first())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    // Republishing a version that exists adds nothing and passes.
    let again = store.publish(t, &chat, &bundle(2), by(&who)).await.unwrap();
    assert!(!again.created);
    // Agents: a second one fits, a third does not (and is not created).
    publish_all(&store, &who, &agent("voice"), &[4]).await;
    let third_agent = store.publish(t, &agent("mail"), &bundle(5), by(&who)).await;
    assert_eq!(kind(third_agent), ErrorKind::Quota);
    assert_eq!(
        store
            .agents(t, &PageRequest::first())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    // Bytes: 7 + 7 + 7 = 21 stored; a version of 24 more bytes would pass 40.
    let big = NewVersion::new(vid(6), "application/json", vec![b' '; 24]);
    assert_eq!(
        kind(store.publish(t, &agent("voice"), &big, by(&who)).await),
        ErrorKind::TooLarge
    );
    // Keys: the admin key of `principal` and one more; a third is refused until one is revoked.
    let second = store.create_key(t, Role::Viewer, None).await.unwrap();
    assert_eq!(
        kind(store.create_key(t, Role::Viewer, None).await),
        ErrorKind::Quota
    );
    store.revoke_key(t, &second.info.id, None).await.unwrap();
    store.create_key(t, Role::Viewer, None).await.unwrap();
    // Another tenant has quotas of its own.
    let (other, _) = principal(&store, "quota-other").await;
    publish_all(&store, &other, &chat, &[1, 2]).await;
}

/// A reference of a version id's shape is read as a version id, so no label may have that shape:
/// the name is refused before any backend sees it, and one character less is a label like any
/// other.
pub async fn a_label_cannot_be_shaped_like_a_version_id(h: &Harness) {
    let store = h.open().await;
    let (who, _) = principal(&store, "shape").await;
    let chat = agent("chat");
    publish_all(&store, &who, &chat, &[1]).await;
    let id = vid(1);
    let refused = LabelName::parse(id.as_str()).expect_err("a version-shaped label was accepted");
    assert_eq!(refused.kind(), ErrorKind::Invalid);
    assert!(refused.to_string().contains("version id"), "{refused}");
    assert!(serde_json::from_value::<LabelName>(json!(id.as_str())).is_err());
    let near = label(&id.as_str()[1..]);
    store
        .move_label(&who.tenant, &chat, &near, &id, &Expected::Absent, by(&who))
        .await
        .unwrap();
    let labels = store.labels(&who.tenant, &chat).await.unwrap();
    assert_eq!(labels.len(), 1);
    assert_eq!(labels[0].name, near);
    assert!(
        labels
            .iter()
            .all(|l| VersionId::parse(l.name.as_str()).is_err())
    );
}

pub async fn concurrent_movers_exactly_one_wins(h: &Harness) {
    // Two instances on one database, as two servers would be.
    let (one, two) = (h.open().await, h.open().await);
    let (who, _) = principal(&one, "race").await;
    let chat = agent("chat");
    let movers: Vec<u32> = (1..=8).collect();
    publish_all(&one, &who, &chat, &[0]).await;
    publish_all(&one, &who, &chat, &movers).await;
    let prod = label("production");
    one.move_label(&who.tenant, &chat, &prod, &vid(0), &Expected::Absent, None)
        .await
        .unwrap();

    let mut tasks = Vec::new();
    for n in movers {
        let store = if n % 2 == 0 { one.clone() } else { two.clone() };
        let (tenant, chat, prod) = (who.tenant.clone(), chat.clone(), prod.clone());
        tasks.push(tokio::spawn(async move {
            let result = store
                .move_label(
                    &tenant,
                    &chat,
                    &prod,
                    &vid(n),
                    &Expected::Version(vid(0)),
                    None,
                )
                .await;
            (n, result.map_err(|e| e.kind()))
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        let (n, result) = task.await.unwrap();
        match result {
            Ok(moved) => {
                assert_eq!(moved.from, Some(vid(0)));
                winners.push(n);
            }
            Err(kind) => assert_eq!(kind, ErrorKind::Conflict, "mover {n}"),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let current = two.label(&who.tenant, &chat, &prod).await.unwrap();
    assert_eq!(current.version, vid(winners[0]));
    let moves = audit_of(&one, &who.tenant, AuditAction::LabelMove).await;
    assert_eq!(moves.len(), 2, "the creation and the one winning move");
}

pub async fn settings_have_revisions(h: &Harness) {
    let store = h
        .open_with(StoreConfig::default().max_settings_bytes(64))
        .await;
    let (who, _) = principal(&store, "settings").await;
    let t = &who.tenant;
    let tenant_scope = SettingsScope::Tenant;
    let chat_scope = SettingsScope::Agent(agent("chat"));
    assert_eq!(store.settings(t, &tenant_scope).await.unwrap(), None);

    let doc1 = json!({"instructions": {"enabled": true, "text": "be brief"}});
    let first = store
        .put_settings(t, &tenant_scope, &doc1, None, by(&who))
        .await
        .unwrap();
    assert_eq!(first.revision, 1);
    let doc2 = json!({"instructions": {"enabled": false, "text": ""}});
    let second = store
        .put_settings(t, &tenant_scope, &doc2, Some(1), by(&who))
        .await
        .unwrap();
    assert_eq!(second.revision, 2);
    assert_eq!(
        kind(
            store
                .put_settings(t, &tenant_scope, &doc1, Some(1), None)
                .await
        ),
        ErrorKind::Conflict
    );
    let read = store.settings(t, &tenant_scope).await.unwrap().unwrap();
    assert_eq!(read.document, doc2);
    assert_eq!(read.revision, 2);
    assert_eq!(read.updated_by.as_ref(), Some(&who.key_id));

    // An agent's settings are their own document with their own revisions; 0 means "never
    // written", and an agent need not be published yet.
    let overrides = json!({"auto_injections": {"payments": "off"}});
    assert_eq!(
        store
            .put_settings(t, &chat_scope, &overrides, Some(0), None)
            .await
            .unwrap()
            .revision,
        1
    );
    assert_eq!(
        kind(
            store
                .put_settings(t, &chat_scope, &overrides, Some(0), None)
                .await
        ),
        ErrorKind::Conflict
    );
    assert_eq!(
        store
            .settings(t, &tenant_scope)
            .await
            .unwrap()
            .unwrap()
            .revision,
        2
    );

    assert_eq!(
        kind(
            store
                .put_settings(t, &tenant_scope, &json!([1]), None, None)
                .await
        ),
        ErrorKind::Invalid
    );
    let big = json!({"text": "x".repeat(64)});
    assert_eq!(
        kind(store.put_settings(t, &tenant_scope, &big, None, None).await),
        ErrorKind::TooLarge
    );
    assert_eq!(
        kind(
            store
                .put_settings(&tenant("ghost"), &tenant_scope, &doc1, None, None)
                .await
        ),
        ErrorKind::NotFound
    );
    let writes = audit_of(&store, t, AuditAction::SettingsWrite).await;
    let trail: Vec<_> = writes
        .iter()
        .map(|e| (e.object.as_str(), e.from.as_deref(), e.to.as_deref()))
        .collect();
    assert_eq!(
        trail,
        [
            ("agents/chat/settings", None, Some("1")),
            ("settings", Some("1"), Some("2")),
            ("settings", None, Some("1")),
        ]
    );
}

pub async fn audit_records_every_write(h: &Harness) {
    let store = h.open().await;
    let (who, _) = principal(&store, "audit").await;
    let t = &who.tenant;
    let chat = agent("chat");
    publish_all(&store, &who, &chat, &[1, 2]).await;
    let prod = label("production");
    store
        .move_label(t, &chat, &prod, &vid(1), &Expected::Absent, by(&who))
        .await
        .unwrap();
    store
        .move_label(t, &chat, &prod, &vid(2), &Expected::Any, by(&who))
        .await
        .unwrap();
    store
        .put_settings(t, &SettingsScope::Tenant, &json!({}), None, by(&who))
        .await
        .unwrap();
    let viewer = store.create_key(t, Role::Viewer, None).await.unwrap();
    store
        .revoke_key(t, &viewer.info.id, by(&who))
        .await
        .unwrap();

    let entries = store
        .audit(t, &PageRequest::first().limit(100))
        .await
        .unwrap()
        .items;
    let summary: Vec<_> = entries
        .iter()
        .rev()
        .map(|e| {
            (
                e.action,
                e.object.clone(),
                e.from.clone(),
                e.to.clone(),
                e.actor.is_some(),
            )
        })
        .collect();
    let s = |x: &str| Some(x.to_owned());
    let (v1, v2) = (vid(1).to_string(), vid(2).to_string());
    let admin_key = format!("keys/{}", who.key_id);
    let viewer_key = format!("keys/{}", viewer.info.id);
    assert_eq!(
        summary,
        [
            (
                AuditAction::TenantCreate,
                "tenant".into(),
                None,
                Some(t.to_string()),
                false
            ),
            (AuditAction::KeyCreate, admin_key, None, s("admin"), false),
            (
                AuditAction::Publish,
                format!("agents/chat/versions/{v1}"),
                None,
                s(&v1),
                true
            ),
            (
                AuditAction::Publish,
                format!("agents/chat/versions/{v2}"),
                None,
                s(&v2),
                true
            ),
            (
                AuditAction::LabelMove,
                "agents/chat/labels/production".into(),
                None,
                s(&v1),
                true
            ),
            (
                AuditAction::LabelMove,
                "agents/chat/labels/production".into(),
                s(&v1),
                s(&v2),
                true
            ),
            (
                AuditAction::SettingsWrite,
                "settings".into(),
                None,
                s("1"),
                true
            ),
            (
                AuditAction::KeyCreate,
                viewer_key.clone(),
                None,
                s("viewer"),
                false
            ),
            (
                AuditAction::KeyRevoke,
                viewer_key,
                s("active"),
                s("revoked"),
                true
            ),
        ]
    );
    assert!(
        entries
            .iter()
            .all(|e| e.actor.is_none() || e.actor.as_ref() == Some(&who.key_id))
    );
    // Newest first, timestamps never going backwards along the log.
    assert!(entries.windows(2).all(|w| w[0].at >= w[1].at));
}

/// For every read and write that names an object, tenant A gets nothing of tenant B's: the same
/// answer as for an object that does not exist.
pub async fn tenant_isolation_on_every_method(h: &Harness) {
    let store = h.open().await;
    let (a, _) = principal(&store, "iso-a").await;
    let (b, b_key) = principal(&store, "iso-b").await;
    let (shared, only_b, prod) = (agent("shared"), agent("only-b"), label("production"));
    // B: two agents, a label, settings of both scopes, a second key.
    publish_all(&store, &b, &shared, &[10]).await;
    publish_all(&store, &b, &only_b, &[11]).await;
    for agent in [&shared, &only_b] {
        let id = if agent == &shared { vid(10) } else { vid(11) };
        store
            .move_label(&b.tenant, agent, &prod, &id, &Expected::Absent, by(&b))
            .await
            .unwrap();
    }
    let b_doc = json!({"instructions": {"enabled": true, "text": "b only"}});
    for scope in [SettingsScope::Tenant, SettingsScope::Agent(shared.clone())] {
        store
            .put_settings(&b.tenant, &scope, &b_doc, None, by(&b))
            .await
            .unwrap();
    }
    let b_viewer = store
        .create_key(&b.tenant, Role::Viewer, None)
        .await
        .unwrap();
    // A: the same agent name, its own version.
    publish_all(&store, &a, &shared, &[1]).await;
    let t = &a.tenant;

    // Agents: A lists only its own.
    let agents = store.agents(t, &PageRequest::first()).await.unwrap();
    let names: Vec<_> = agents.items.iter().map(|x| x.name.to_string()).collect();
    assert_eq!(names, ["shared"]);
    // Versions: B's agent does not exist for A; B's version of a shared name does not either.
    assert_eq!(
        kind(store.versions(t, &only_b, &PageRequest::first()).await),
        ErrorKind::NotFound
    );
    let versions = store
        .versions(t, &shared, &PageRequest::first())
        .await
        .unwrap();
    assert_eq!(
        versions
            .items
            .iter()
            .map(|v| v.id.clone())
            .collect::<Vec<_>>(),
        [vid(1)]
    );
    assert_eq!(
        kind(store.version(t, &shared, &vid(10)).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(store.version(t, &only_b, &vid(11)).await),
        ErrorKind::NotFound
    );
    // Labels.
    assert_eq!(
        kind(store.label(t, &shared, &prod).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(store.label(t, &only_b, &prod).await),
        ErrorKind::NotFound
    );
    assert_eq!(store.labels(t, &shared).await.unwrap(), vec![]);
    assert_eq!(kind(store.labels(t, &only_b).await), ErrorKind::NotFound);
    // Moves cannot reach B's agent nor point A's label at B's version.
    assert_eq!(
        kind(
            store
                .move_label(t, &only_b, &prod, &vid(11), &Expected::Any, by(&a))
                .await
        ),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(
            store
                .move_label(t, &shared, &prod, &vid(10), &Expected::Any, by(&a))
                .await
        ),
        ErrorKind::NotFound
    );
    // Settings: A sees none of B's, and A's writes do not touch B's.
    assert_eq!(
        store.settings(t, &SettingsScope::Tenant).await.unwrap(),
        None
    );
    let shared_scope = SettingsScope::Agent(shared.clone());
    assert_eq!(store.settings(t, &shared_scope).await.unwrap(), None);
    let a_settings = store
        .put_settings(t, &shared_scope, &json!({"a": 1}), Some(0), by(&a))
        .await
        .unwrap();
    assert_eq!(a_settings.revision, 1);
    let b_settings = store
        .settings(&b.tenant, &shared_scope)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (b_settings.document, b_settings.revision),
        (b_doc.clone(), 1)
    );
    // Audit: A's log holds only A's entries.
    let audit = store
        .audit(t, &PageRequest::first().limit(200))
        .await
        .unwrap();
    assert!(audit.items.iter().all(|e| !e.object.contains("only-b")
        && e.actor.as_ref() != Some(&b.key_id)
        && e.to.as_deref() != Some(b.tenant.as_str())));
    assert!(
        audit
            .items
            .iter()
            .all(|e| e.to.as_deref() != Some(vid(10).as_str()))
    );
    // Keys: A lists only its own and cannot revoke B's.
    let keys = store.keys(t, &PageRequest::first()).await.unwrap();
    assert_eq!(
        keys.items.iter().map(|k| &k.id).collect::<Vec<_>>(),
        [&a.key_id]
    );
    assert_eq!(
        kind(store.revoke_key(t, &b_viewer.info.id, by(&a)).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(store.revoke_key(t, &b.key_id, by(&a)).await),
        ErrorKind::NotFound
    );
    let b_again = store.authenticate(&b_key).await.unwrap().unwrap();
    assert_eq!(b_again.tenant, b.tenant);
    assert!(
        store
            .authenticate(b_viewer.key.expose())
            .await
            .unwrap()
            .is_some()
    );
    // Publishing B's version id under A's tenant is A's own version, not a conflict with B's.
    let forged = NewVersion::new(vid(10), "application/json", b"a's bytes".to_vec());
    assert!(
        store
            .publish(t, &shared, &forged, by(&a))
            .await
            .unwrap()
            .created
    );
    assert_eq!(
        store
            .version(&b.tenant, &shared, &vid(10))
            .await
            .unwrap()
            .bundle,
        b"{\"n\":10}"
    );
}

pub async fn key_authentication(h: &Harness) {
    let store = h.open().await;
    let t = tenant("auth");
    let created = store
        .create_key(&t, Role::Editor, Some(&"ci".parse().unwrap()))
        .await
        .unwrap();
    let key = created.key.expose().to_owned();
    let principal = store.authenticate(&key).await.unwrap().unwrap();
    assert_eq!(
        (&principal.tenant, principal.role, &principal.key_id),
        (&t, Role::Editor, &created.info.id)
    );
    // Debug output of everything handed back names no secret.
    let secret = &key[key.len() - 64..];
    for shown in [
        format!("{created:?}"),
        format!("{principal:?}"),
        format!("{:?}", created.info),
    ] {
        assert!(!shown.contains(secret), "{shown}");
    }

    // The right id with a wrong secret.
    let mut wrong = key.clone();
    let last = if wrong.ends_with('0') { "1" } else { "0" };
    wrong.replace_range(wrong.len() - 1.., last);
    assert_eq!(store.authenticate(&wrong).await.unwrap(), None);
    // An unknown id with a well-formed secret.
    let unknown = format!("psk_{}_{}", "0".repeat(16), &key[key.len() - 64..]);
    assert_eq!(store.authenticate(&unknown).await.unwrap(), None);
    // Malformed keys.
    for malformed in [
        String::new(),
        "psk_".into(),
        key.to_uppercase(),
        format!("{key} "),
        format!("Bearer {key}"),
        key[..key.len() - 1].to_owned(),
        key.replace("psk_", "psx_"),
        "psk_é".repeat(17),
        "x".repeat(100_000),
    ] {
        assert_eq!(
            store.authenticate(&malformed).await.unwrap(),
            None,
            "{malformed:.40}"
        );
    }
    // Revoked.
    let (info, revoked) = store.revoke_key(&t, &created.info.id, None).await.unwrap();
    assert!(revoked && info.revoked_at.is_some());
    assert_eq!(store.authenticate(&key).await.unwrap(), None);
    assert_eq!(created.info.name.as_deref(), Some("ci"));
}

pub async fn keys_list_and_revoke(h: &Harness) {
    let store = h.open().await;
    let (t1, t2) = (tenant("keys-a"), tenant("keys-b"));
    let k1 = store
        .create_key(&t1, Role::Admin, Some(&"first".parse().unwrap()))
        .await
        .unwrap();
    let k2 = store.create_key(&t2, Role::Viewer, None).await.unwrap();
    let k3 = store.create_key(&t1, Role::Editor, None).await.unwrap();
    assert!(!store.create_tenant(&t1).await.unwrap());
    assert!(store.create_tenant(&tenant("keys-c")).await.unwrap());

    let listed = store.keys(&t1, &PageRequest::first()).await.unwrap().items;
    assert_eq!(listed, vec![k1.info.clone(), k3.info.clone()]);

    // The operator's listing spans tenants, oldest first, page by page.
    let mut all = Vec::new();
    let mut request = PageRequest::first().limit(2);
    loop {
        let page = store.admin().keys(&request).await.unwrap();
        all.extend(page.items);
        match page.next {
            Some(next) => request = PageRequest::first().limit(2).after(next),
            None => break,
        }
    }
    assert_eq!(all, vec![k1.info.clone(), k2.info.clone(), k3.info.clone()]);

    let (revoked, changed) = store.admin().revoke_key(&k2.info.id).await.unwrap();
    assert!(changed && revoked.revoked_at.is_some());
    let (again, changed) = store.admin().revoke_key(&k2.info.id).await.unwrap();
    assert!(!changed);
    assert_eq!(again.revoked_at, revoked.revoked_at);
    assert_eq!(store.authenticate(k2.key.expose()).await.unwrap(), None);
    let unknown = promptstack_store::KeyId::parse(&"f".repeat(16)).unwrap();
    assert_eq!(
        kind(store.admin().revoke_key(&unknown).await),
        ErrorKind::NotFound
    );
    // The revocation is in the key's tenant's audit log, by the operator.
    let revokes = audit_of(&store, &t2, AuditAction::KeyRevoke).await;
    assert_eq!(revokes.len(), 1);
    assert_eq!(revokes[0].actor, None);
}

pub async fn notifications_for_label_moves_and_settings(h: &Harness) {
    // On PostgreSQL the writer and the subscriber are two instances, as two servers would be;
    // on SQLite, notifications are in-process, so they are one.
    let writer = h.open().await;
    let reader = if h.is_postgres() {
        h.open().await
    } else {
        writer.clone()
    };
    let mut changes = reader.subscribe().await.unwrap();
    let (who, _) = principal(&writer, "notify").await;
    let (t, chat, prod) = (&who.tenant, agent("chat"), label("production"));

    publish_all(&writer, &who, &chat, &[1]).await;
    let published = next_change(&mut changes).await;
    assert_eq!(published.kind, ChangeKind::Published);

    writer
        .move_label(t, &chat, &prod, &vid(1), &Expected::Absent, None)
        .await
        .unwrap();
    let moved = next_change(&mut changes).await;
    assert_eq!(
        (&moved.tenant, moved.agent.as_ref(), &moved.kind),
        (t, Some(&chat), &ChangeKind::Label(prod.clone()))
    );

    // A refused write announces nothing: the next change is the settings write.
    assert!(
        writer
            .move_label(t, &chat, &prod, &vid(1), &Expected::Absent, None)
            .await
            .is_err()
    );
    writer
        .put_settings(t, &SettingsScope::Tenant, &json!({"x": 1}), None, None)
        .await
        .unwrap();
    let settings = next_change(&mut changes).await;
    assert_eq!(
        (&settings.tenant, settings.agent.as_ref(), &settings.kind),
        (t, None, &ChangeKind::Settings)
    );
    writer
        .put_settings(
            t,
            &SettingsScope::Agent(chat.clone()),
            &json!({}),
            None,
            None,
        )
        .await
        .unwrap();
    let agent_settings = next_change(&mut changes).await;
    assert_eq!(agent_settings.agent.as_ref(), Some(&chat));
}

pub async fn notifications_report_lagging(h: &Harness) {
    let store = h
        .open_with(StoreConfig::default().notification_buffer(1))
        .await;
    let mut idle = store.subscribe().await.unwrap();
    let mut probe = store.subscribe().await.unwrap();
    let (who, _) = principal(&store, "lag").await;
    let agents = ["a0", "a1", "a2", "a3"].map(agent);
    for name in &agents {
        let scope = SettingsScope::Agent(name.clone());
        store
            .put_settings(&who.tenant, &scope, &json!({}), None, None)
            .await
            .unwrap();
    }
    // Once the probe has heard the last change, all four were sent, and the subscriber that
    // read nothing is more than its buffer of one behind.
    loop {
        if let Notification::Change(change) = next(&mut probe).await
            && change.agent.as_ref() == Some(&agents[3])
        {
            break;
        }
    }
    assert_eq!(next(&mut idle).await, Notification::Gap(Gap::Lagged));
    // After the gap, the subscriber goes on with what is still buffered: the last change.
    let Notification::Change(last) = next(&mut idle).await else {
        panic!("a change follows the gap");
    };
    assert_eq!(last.agent.as_ref(), Some(&agents[3]));
}

pub async fn acknowledged_writes_survive_kill_9(h: &Harness) {
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    let t = tenant("durable");
    let location = match h.location() {
        Location::Sqlite(path) => path.display().to_string(),
        Location::Postgres(url) => url.clone(),
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_store-writer"))
        .args([location.as_str(), t.as_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the writer starts");
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut acked = 0u64;
    let mut label_acked = false;
    while let Some(Ok(line)) = lines.next() {
        if line == "acked label" {
            label_acked = true;
        } else if let Some(n) = line.strip_prefix("acked settings ") {
            acked = n.parse().unwrap();
            if acked >= 20 {
                break;
            }
        }
    }
    // SIGKILL, while the writer is in the middle of its next writes.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        label_acked && acked >= 20,
        "the writer stopped early: {acked}"
    );

    let store = h.open().await;
    let label = store
        .label(&t, &agent("durable"), &label("production"))
        .await
        .unwrap();
    assert_eq!(label.version.as_str(), "d".repeat(64));
    let settings = store
        .settings(&t, &SettingsScope::Tenant)
        .await
        .unwrap()
        .unwrap();
    assert!(
        settings.revision >= acked,
        "{} < {acked}",
        settings.revision
    );
    assert_eq!(settings.document, json!({"n": settings.revision}));
    let writes = audit_of(&store, &t, AuditAction::SettingsWrite).await;
    assert_eq!(writes.len() as u64, settings.revision);
}

/// A random sequence of label moves, applied to the store and to a model: every outcome agrees,
/// the final labels agree, and replaying the audit log's moves reproduces them.
pub async fn label_history_replays_from_the_audit_log(h: &Harness) {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    #[derive(Debug, Clone)]
    struct Op {
        label: usize,
        to: u32,
        expect: Option<Option<u32>>,
    }
    let op = (
        0..3usize,
        0..4u32,
        prop::option::of(prop::option::of(0..4u32)),
    )
        .prop_map(|(label, to, expect)| Op { label, to, expect });
    let store = h.open().await;
    let runtime = tokio::runtime::Handle::current();
    let mut runner = TestRunner::new(Config {
        cases: 12,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&prop::collection::vec(op, 1..24), |ops| {
        tokio::task::block_in_place(|| {
            runtime.block_on(async {
                let (who, _) = principal(&store, "replay").await;
                let chat = agent("chat");
                publish_all(&store, &who, &chat, &[0, 1, 2, 3]).await;
                let names = ["production", "staging", "canary"].map(label);
                let mut model: BTreeMap<usize, u32> = BTreeMap::new();
                let mut moves = 0;
                for op in &ops {
                    let expected = match op.expect {
                        None => Expected::Any,
                        Some(None) => Expected::Absent,
                        Some(Some(v)) => Expected::Version(vid(v)),
                    };
                    let current = model.get(&op.label).copied();
                    let allowed = match op.expect {
                        None => true,
                        Some(want) => want == current,
                    };
                    let result = store
                        .move_label(
                            &who.tenant,
                            &chat,
                            &names[op.label],
                            &vid(op.to),
                            &expected,
                            by(&who),
                        )
                        .await;
                    if allowed {
                        let moved = result.expect("an allowed move succeeds");
                        prop_assert_eq!(moved.changed, current != Some(op.to));
                        prop_assert_eq!(moved.from, current.map(vid));
                        if current != Some(op.to) {
                            moves += 1;
                        }
                        model.insert(op.label, op.to);
                    } else {
                        prop_assert_eq!(
                            result.map_err(|e| e.kind()).unwrap_err(),
                            ErrorKind::Conflict
                        );
                    }
                }
                let stored: BTreeMap<String, String> = store
                    .labels(&who.tenant, &chat)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|l| (l.name.to_string(), l.version.to_string()))
                    .collect();
                let modelled: BTreeMap<String, String> = model
                    .iter()
                    .map(|(l, v)| (names[*l].to_string(), vid(*v).to_string()))
                    .collect();
                prop_assert_eq!(&stored, &modelled);
                // Replay: each entry starts where the previous one for its label ended.
                let mut log = audit_of(&store, &who.tenant, AuditAction::LabelMove).await;
                log.reverse();
                prop_assert_eq!(log.len(), moves);
                let mut replayed: BTreeMap<String, String> = BTreeMap::new();
                for entry in log {
                    let name = entry.object.rsplit('/').next().unwrap().to_owned();
                    prop_assert_eq!(entry.from, replayed.get(&name).cloned());
                    replayed.insert(name, entry.to.unwrap());
                }
                prop_assert_eq!(replayed, modelled);
                Ok(())
            })
        })
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

// --- backend-specific cases -------------------------------------------------------------------

pub async fn sqlite_file_is_private_and_durable() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nested").join("data");
    let store = Store::open_with(Location::data_dir(&data), StoreConfig::default())
        .await
        .unwrap();
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&data.join("promptstack.db")), 0o600);
    store.create_tenant(&tenant("perm")).await.unwrap();
    assert_eq!(mode(&data.join("promptstack.db-wal")), 0o600);

    // The settings a fresh connection sees: WAL (persistent in the file) and the store's own
    // connections' synchronous=FULL, foreign keys on.
    use sqlx::{Connection, Row};
    let path = data.join("promptstack.db");
    let mut conn = sqlx::sqlite::SqliteConnection::connect_with(
        &sqlx::sqlite::SqliteConnectOptions::new().filename(&path),
    )
    .await
    .unwrap();
    let journal: String = sqlx::query("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap()
        .get(0);
    assert_eq!(journal, "wal");
    drop(conn);
    store.close().await;
}

pub async fn sqlite_unwritable_location_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    std::fs::write(&file, b"not a directory").unwrap();
    let result = Store::open_with(
        Location::data_dir(file.join("data")),
        StoreConfig::default(),
    )
    .await;
    assert_eq!(kind(result), ErrorKind::Unavailable);
    // A file that is not a database is refused, not overwritten.
    let result = Store::open(file.to_str().unwrap()).await;
    assert!(result.is_err());
    assert_eq!(std::fs::read(&file).unwrap(), b"not a directory");
}

pub async fn postgres_listener_reports_loss_and_recovery(h: &Harness) {
    let (writer, reader) = (h.open().await, h.open().await);
    let mut changes = reader.subscribe().await.unwrap();
    let (who, _) = principal(&writer, "listener").await;
    h.database().terminate_connections().await.unwrap();
    assert_eq!(
        next(&mut changes).await,
        Notification::Gap(Gap::ListenerLost)
    );
    assert_eq!(
        next(&mut changes).await,
        Notification::Gap(Gap::ListenerRestored)
    );
    // Listening again: a later write is heard.
    let written = writer
        .put_settings(&who.tenant, &SettingsScope::Tenant, &json!({}), None, None)
        .await;
    written.unwrap();
    assert_eq!(next_change(&mut changes).await.kind, ChangeKind::Settings);
}

pub async fn postgres_outage_fails_fast_and_recovers(h: &Harness) {
    let config = StoreConfig::default()
        .acquire_timeout(Duration::from_millis(500))
        .operation_timeout(Duration::from_secs(2));
    let store = h.open_with(config).await;
    let (who, key) = principal(&store, "outage").await;
    let doc = json!({"before": true});
    store
        .put_settings(&who.tenant, &SettingsScope::Tenant, &doc, None, None)
        .await
        .unwrap();

    let database = h.database();
    database.allow_connections(false).await.unwrap();
    database.terminate_connections().await.unwrap();
    let during = store
        .put_settings(
            &who.tenant,
            &SettingsScope::Tenant,
            &json!({"during": true}),
            None,
            None,
        )
        .await;
    assert_eq!(kind(during), ErrorKind::Unavailable);
    assert_eq!(kind(store.authenticate(&key).await), ErrorKind::Unavailable);
    assert_eq!(kind(store.ping().await), ErrorKind::Unavailable);

    database.allow_connections(true).await.unwrap();
    store.ping().await.unwrap();
    let after = store
        .settings(&who.tenant, &SettingsScope::Tenant)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (after.document, after.revision),
        (doc, 1),
        "the refused write left no trace"
    );
    assert!(store.authenticate(&key).await.unwrap().is_some());
}

pub async fn postgres_unreachable_server_is_unavailable() {
    let config = StoreConfig::default().acquire_timeout(Duration::from_millis(500));
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    let location = Location::parse("postgres://postgres@127.0.0.1:1/none").unwrap();
    assert_eq!(
        kind(Store::open_with(location, config).await),
        ErrorKind::Unavailable
    );
}

pub async fn postgres_instances_open_concurrently(h: &Harness) {
    // Several servers starting at once on a fresh database migrate it once, together.
    let opens = (0..4).map(|_| Store::open_with(h.location().clone(), StoreConfig::default()));
    for store in futures::future::join_all(opens).await {
        store.unwrap().ping().await.unwrap();
    }
}

// --- helpers ----------------------------------------------------------------------------------

/// The tenant's audit entries of one action, newest first.
async fn audit_of(
    store: &Store,
    tenant: &Tenant,
    action: AuditAction,
) -> Vec<promptstack_store::AuditEntry> {
    let mut entries = Vec::new();
    let mut request = PageRequest::first().limit(200);
    loop {
        let page = store.audit(tenant, &request).await.unwrap();
        entries.extend(page.items.into_iter().filter(|e| e.action == action));
        match page.next {
            Some(next) => request = PageRequest::first().limit(200).after(next),
            None => return entries,
        }
    }
}

/// The next notification, within the delivery bound.
async fn next(changes: &mut Subscription) -> Notification {
    tokio::time::timeout(DELIVERY * 10, changes.next())
        .await
        .expect("a notification arrives")
        .expect("the subscription is open")
}

/// The next change, within the delivery bound; a gap fails the test.
async fn next_change(changes: &mut Subscription) -> promptstack_store::Change {
    match tokio::time::timeout(DELIVERY, changes.next()).await {
        Ok(Some(Notification::Change(change))) => change,
        other => panic!("expected a change within {DELIVERY:?}, got {other:?}"),
    }
}
