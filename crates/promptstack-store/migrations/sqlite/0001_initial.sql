-- The initial schema. Timestamps are microseconds since the Unix epoch (UTC); JSON is stored as
-- text so that it reads back byte for byte. Rows are never deleted: keys are revoked, labels move.

CREATE TABLE tenants (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    slug       TEXT    NOT NULL UNIQUE,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE api_keys (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    public_id  TEXT    NOT NULL UNIQUE,
    tenant_id  INTEGER NOT NULL REFERENCES tenants (id),
    role       TEXT    NOT NULL CHECK (role IN ('admin', 'editor', 'viewer')),
    name       TEXT,
    hash       BLOB    NOT NULL CHECK (length(hash) = 32),
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
) STRICT;

CREATE INDEX api_keys_by_tenant ON api_keys (tenant_id, id);

CREATE TABLE agents (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  INTEGER NOT NULL REFERENCES tenants (id),
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (tenant_id, name)
) STRICT;

CREATE TABLE versions (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    agent_id     INTEGER NOT NULL REFERENCES agents (id),
    version_id   TEXT    NOT NULL,
    content_type TEXT    NOT NULL,
    bundle       BLOB    NOT NULL,
    size         INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    created_by   TEXT,
    warnings     TEXT    NOT NULL,
    UNIQUE (agent_id, version_id)
) STRICT;

CREATE INDEX versions_by_agent ON versions (agent_id, seq);

CREATE TABLE labels (
    agent_id   INTEGER NOT NULL REFERENCES agents (id),
    name       TEXT    NOT NULL,
    version_id TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    updated_by TEXT,
    PRIMARY KEY (agent_id, name),
    FOREIGN KEY (agent_id, version_id) REFERENCES versions (agent_id, version_id)
) STRICT;

-- `agent` is '' for the tenant's own settings, an agent name otherwise.
CREATE TABLE settings (
    tenant_id  INTEGER NOT NULL REFERENCES tenants (id),
    agent      TEXT    NOT NULL,
    document   TEXT    NOT NULL,
    revision   INTEGER NOT NULL CHECK (revision > 0),
    updated_at INTEGER NOT NULL,
    updated_by TEXT,
    PRIMARY KEY (tenant_id, agent)
) STRICT;

CREATE TABLE audit (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id  INTEGER NOT NULL REFERENCES tenants (id),
    at         INTEGER NOT NULL,
    actor      TEXT,
    action     TEXT    NOT NULL,
    object     TEXT    NOT NULL,
    from_value TEXT,
    to_value   TEXT
) STRICT;

CREATE INDEX audit_by_tenant ON audit (tenant_id, seq);
