package dev.idempotency.db;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.idempotency.testing.MigratedSchema;
import java.sql.SQLException;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Upgrading to V5: the sweeper's index of leases no longer names the status column (so completions can
 * be HOT updates); settled leases give up their lease columns, while live leases, leases that ran out
 * and unknown outcomes keep them and stay where the sweeper and operators find them.
 */
class KeyCompletionInPlaceMigrationTest {
    @RegisterExtension
    final MigratedSchema schema = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("v5").poolSize(2).build();

    @Test
    void settledLeasesGiveUpTheirLeaseAndTheOthersKeepIt() throws SQLException {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name(), "4");
        schema.execute("""
                INSERT INTO idempotency_keys (tenant_id, idempotency_key, status, result, failure, lease_token, lease_expires_at,
                                              expires_at)
                VALUES ('t1', 'no-lease',         'completed',  '1', NULL, NULL, NULL, now() + interval '1 day'),
                       ('t1', 'lease-completed',  'completed',  '1', NULL, 1, now() - interval '1 hour', now() + interval '1 day'),
                       ('t1', 'lease-declined',   'failed',     NULL, '{"code": "card_declined"}', 2,
                        now() - interval '1 hour', now() + interval '1 day'),
                       ('t1', 'lease-live',       'processing', NULL, NULL, 3, now() + interval '1 hour', now() + interval '1 day'),
                       ('t1', 'lease-ran-out',    'processing', NULL, NULL, 4, now() - interval '1 minute', now() + interval '1 day'),
                       ('t1', 'unknown-outcome',  'failed',     NULL, '{"code": "lease_expired"}', 5,
                        now() - interval '1 hour', now() + interval '1 day')""");

        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());

        assertEquals(List.of("lease-live 3", "lease-ran-out 4", "unknown-outcome 5"),
                strings("SELECT idempotency_key || ' ' || lease_token FROM idempotency_keys WHERE lease_expires_at IS NOT NULL "
                        + "ORDER BY idempotency_key"));
        assertEquals(List.of("idempotency_keys_expires_at", "idempotency_keys_leases", "idempotency_keys_pkey"),
                strings("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'idempotency_keys' "
                        + "ORDER BY indexname"));
        assertEquals(List.of("CREATE INDEX idempotency_keys_leases ON " + schema.name()
                        + ".idempotency_keys USING btree (lease_expires_at) WHERE (lease_expires_at IS NOT NULL)"),
                strings("SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'idempotency_keys_leases'"));
    }

    private List<String> strings(String sql) throws SQLException {
        return FirstColumn.of(schema.dataSource(), sql);
    }
}
