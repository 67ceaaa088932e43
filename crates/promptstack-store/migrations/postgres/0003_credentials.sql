-- Provider credentials of a tenant, by name. `sealed` is the secret encrypted with AEAD under the
-- server's credentials key (a format byte, the nonce, the ciphertext and its tag), with the
-- tenant and the name as associated data: it opens only as this tenant's credential of this name.
-- The plaintext is never stored.

CREATE TABLE credentials (
    tenant_id    BIGINT NOT NULL REFERENCES tenants (id),
    name         TEXT   COLLATE "C" NOT NULL,
    sealed       BYTEA  NOT NULL,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    updated_by   TEXT,
    last_used_at BIGINT,
    PRIMARY KEY (tenant_id, name)
);
