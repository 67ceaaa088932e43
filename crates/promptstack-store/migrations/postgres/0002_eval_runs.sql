-- Eval runs and their cells. A run belongs to a tenant and an agent; its cells (one per version
-- × model × scenario × repetition) are claimed by workers under a lease and completed once, with
-- their result row. A cell is claimable while it is not done and its lease (if any) has run out;
-- `generation` grows with every claim, so a completion names the claim it holds. The run's
-- counters are updated in the completing transaction: its progress is one row read.

CREATE TABLE eval_runs (
    id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id    TEXT   NOT NULL UNIQUE,
    tenant_id    BIGINT NOT NULL REFERENCES tenants (id),
    agent_id     BIGINT NOT NULL REFERENCES agents (id),
    suite        TEXT   NOT NULL,
    refs         TEXT   NOT NULL,
    models       TEXT   NOT NULL,
    scenarios    TEXT   NOT NULL,
    repeats      BIGINT NOT NULL CHECK (repeats > 0),
    state        TEXT   NOT NULL
                 CHECK (state IN ('queued', 'running', 'done', 'cancelled', 'failed')),
    message      TEXT,
    created_at   BIGINT NOT NULL,
    created_by   TEXT,
    started_at   BIGINT,
    finished_at  BIGINT,
    cells_total  BIGINT NOT NULL CHECK (cells_total > 0),
    cells_done   BIGINT NOT NULL DEFAULT 0,
    cells_failed BIGINT NOT NULL DEFAULT 0,
    busy_micros  BIGINT NOT NULL DEFAULT 0,
    result_bytes BIGINT NOT NULL DEFAULT 0
);

CREATE INDEX eval_runs_by_tenant ON eval_runs (tenant_id, id);
CREATE INDEX eval_runs_active ON eval_runs (state, id) WHERE state IN ('queued', 'running');

CREATE TABLE eval_cells (
    run_id      BIGINT NOT NULL REFERENCES eval_runs (id),
    idx         BIGINT NOT NULL,
    version_id  TEXT   NOT NULL,
    model       TEXT   NOT NULL,
    scenario    TEXT   NOT NULL,
    repetition  BIGINT NOT NULL,
    worker      TEXT,
    generation  BIGINT NOT NULL DEFAULT 0,
    claimed_at  BIGINT,
    lease_until BIGINT,
    done_at     BIGINT,
    failed      BIGINT NOT NULL DEFAULT 0 CHECK (failed IN (0, 1)),
    result      TEXT,
    PRIMARY KEY (run_id, idx)
);

CREATE INDEX eval_cells_open ON eval_cells (run_id, idx) WHERE done_at IS NULL;
