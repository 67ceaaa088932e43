//! The store's conformance suite: every case in `cases` runs against SQLite (a file in a
//! temporary directory) and PostgreSQL (a fresh database on the test server, dropped after the
//! case, also when it fails). PostgreSQL being unreachable fails the PostgreSQL half.

mod cases;
mod credentials;
mod runs;
mod support;

/// Every case that runs on both backends, instantiated below once per backend.
macro_rules! for_each_case {
    ($instantiate:ident) => {
        $instantiate! {
            open_migrates_and_reopens,
            publish_is_idempotent,
            publish_validates_its_input,
            versions_paginate_newest_first,
            agents_paginate_by_name,
            pagination_is_bounded,
            label_moves_compare_and_set,
            forced_moves_are_audited_with_their_note,
            label_count_is_capped,
            tenant_quotas_refuse_past_them,
            a_label_cannot_be_shaped_like_a_version_id,
            concurrent_movers_exactly_one_wins,
            settings_have_revisions,
            audit_records_every_write,
            tenant_isolation_on_every_method,
            key_authentication,
            keys_list_and_revoke,
            notifications_for_label_moves_and_settings,
            notifications_report_lagging,
            acknowledged_writes_survive_kill_9,
            label_history_replays_from_the_audit_log,
            eval_runs_claim_and_complete_every_cell,
            eval_cells_are_claimed_again_after_their_lease,
            eval_runs_cancel_and_fail,
            eval_run_quotas_and_validation,
            eval_runs_are_isolated_by_tenant,
            credentials_are_sealed_and_used_only_by_own_runs,
        }
    };
}

macro_rules! instantiate {
    ($backend:ident: $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let harness = crate::support::Harness::$backend().await;
                crate::cases::$case(&harness).await;
            }
        )*
    };
}

macro_rules! sqlite_cases {
    ($($case:ident),* $(,)?) => { instantiate!(sqlite: $($case),*); };
}

macro_rules! postgres_cases {
    ($($case:ident),* $(,)?) => { instantiate!(postgres: $($case),*); };
}

mod sqlite {
    for_each_case!(sqlite_cases);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn file_is_private_and_durable() {
        crate::cases::sqlite_file_is_private_and_durable().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unwritable_location_is_unavailable() {
        crate::cases::sqlite_unwritable_location_is_unavailable().await;
    }
}

mod postgres {
    for_each_case!(postgres_cases);

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn listener_reports_loss_and_recovery() {
        let harness = crate::support::Harness::postgres().await;
        crate::cases::postgres_listener_reports_loss_and_recovery(&harness).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn outage_fails_fast_and_recovers() {
        let harness = crate::support::Harness::postgres().await;
        crate::cases::postgres_outage_fails_fast_and_recovers(&harness).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn unreachable_server_is_unavailable() {
        crate::cases::postgres_unreachable_server_is_unavailable().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_instances_complete_every_cell_once() {
        let harness = crate::support::Harness::postgres().await;
        crate::runs::postgres_two_instances_complete_every_cell_once(&harness).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn instances_open_concurrently() {
        let harness = crate::support::Harness::postgres().await;
        crate::cases::postgres_instances_open_concurrently(&harness).await;
    }
}
