-- The example's own tables, in the application's Flyway history (the starter migrates the library's
-- tables after these, into its own history table).
CREATE TABLE payments (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id   text        NOT NULL,
    request_key text        NOT NULL,
    payer       text        NOT NULL,
    amount      bigint      NOT NULL,
    currency    text        NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Written with JdbcTemplate beside the JPA entity, to show both join the key's transaction.
CREATE TABLE payment_audit (
    payment_id  bigint NOT NULL REFERENCES payments (id),
    note        text   NOT NULL
);
