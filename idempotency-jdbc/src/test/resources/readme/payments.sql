-- The table the README's examples write to; ReadmeExamplesTest creates it and checks the README shows it.
-- tag::payments-table[]
CREATE TABLE payments (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account   text   NOT NULL,
    cents     bigint NOT NULL,
    charge_id text
);
-- end::payments-table[]
