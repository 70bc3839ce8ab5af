package dev.idempotency.console;

import java.util.Map;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;

/** Idempotency keys written straight into a migrated schema for the console's tests, and read back. */
final class KeyRows {
    private KeyRows() {
    }

    /** A lease-mode key the sweeper failed as lease_expired (its lease ran out a minute ago), as it leaves one. */
    static void insertUnknownOutcome(DataSource dataSource, String tenant, String key) {
        Jdbi.create(dataSource).useHandle(h -> h.createUpdate("INSERT INTO idempotency_keys (tenant_id, idempotency_key,"
                + " status, failure, lease_token, lease_expires_at, expires_at) VALUES (:tenant, :key, 'failed',"
                + " jsonb_build_object('code', 'lease_expired', 'message', 'unknown'), 7, now() - interval '1 minute',"
                + " now() + interval '1 hour')").bind("tenant", tenant).bind("key", key).execute());
    }

    /** The key's status, result (as jsonb text), failure code and message. */
    static Map<String, Object> row(DataSource dataSource, String tenant, String key) {
        return Jdbi.create(dataSource).withHandle(h -> h.createQuery("SELECT status, result::text AS result,"
                + " failure ->> 'code' AS code, failure ->> 'message' AS message FROM idempotency_keys"
                + " WHERE tenant_id = :tenant AND idempotency_key = :key").bind("tenant", tenant).bind("key", key)
                .mapToMap().one());
    }
}
