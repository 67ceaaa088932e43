-- The initial schema. Timestamps are microseconds since the Unix epoch (UTC); JSON is stored as
-- text so that it reads back byte for byte. Names compare bytewise (COLLATE "C"), as in SQLite, so
-- both backends list in the same order. Rows are never deleted: keys are revoked, labels move.

CREATE TABLE tenants (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    slug       TEXT   COLLATE "C" NOT NULL UNIQUE,
    created_at BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    public_id  TEXT   NOT NULL UNIQUE,
    tenant_id  BIGINT NOT NULL REFERENCES tenants (id),
    role       TEXT   NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    name       TEXT,
    hash       BYTEA  NOT NULL CHECK (octet_length(hash) = 32),
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);

CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, id);

CREATE TABLE agents (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  BIGINT NOT NULL REFERENCES tenants (id),
    name       TEXT   COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    UNIQUE (tenant_id, name)
);

CREATE TABLE versions (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    agent_id     BIGINT NOT NULL REFERENCES agents (id),
    version_id   TEXT   NOT NULL,
    content_type TEXT   NOT NULL,
    bundle       BYTEA  NOT NULL,
    size         BIGINT NOT NULL,
    created_at   BIGINT NOT NULL,
    created_by   TEXT,
    warnings     TEXT   NOT NULL,
    UNIQUE (agent_id, version_id)
);

CREATE INDEX versions_by_agent ON versions (agent_id, seq);

CREATE TABLE labels (
    agent_id   BIGINT NOT NULL REFERENCES agents (id),
    name       TEXT   COLLATE "C" NOT NULL,
    version_id TEXT   NOT NULL,
    updated_at BIGINT NOT NULL,
    updated_by TEXT,
    PRIMARY KEY (agent_id, name),
    FOREIGN KEY (agent_id, version_id) REFERENCES versions (agent_id, version_id)
);

-- `agent` is '' for the tenant's own settings, an agent name otherwise.
CREATE TABLE settings (
    tenant_id  BIGINT NOT NULL REFERENCES tenants (id),
    agent      TEXT   COLLATE "C" NOT NULL,
    document   TEXT   NOT NULL,
    revision   BIGINT NOT NULL CHECK (revision > 0),
    updated_at BIGINT NOT NULL,
    updated_by TEXT,
    PRIMARY KEY (tenant_id, agent)
);

CREATE TABLE audit (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id  BIGINT NOT NULL REFERENCES tenants (id),
    at         BIGINT NOT NULL,
    actor      TEXT,
    action     TEXT   NOT NULL,
    object     TEXT   NOT NULL,
    from_value TEXT,
    to_value   TEXT
);

CREATE INDEX audit_by_tenant ON audit (tenant_id, seq);
