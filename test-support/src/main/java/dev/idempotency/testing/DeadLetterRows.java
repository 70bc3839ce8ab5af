package dev.idempotency.testing;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;

/**
 * Dead letters written straight into a migrated schema's {@code outbox_retries}, as the relay leaves one
 * after its last attempt, for the console's tests; and the status a row has since.
 */
public final class DeadLetterRows {
    private DeadLetterRows() {
    }

    /**
     * Writes dead letter {@code id} (tenant t1, key k{id}, three attempts, a last error with markup in it)
     * with {@code payloadJson} as its payload.
     */
    public static void insert(DataSource dataSource, long id, String topic, String payloadJson) {
        run(dataSource, """
                INSERT INTO outbox_retries (event_id, message_id, tenant_id, topic, partition_key, ordering_hash,
                                            payload, headers, created_at, status, attempts, last_error)
                VALUES (?, gen_random_uuid(), 't1', ?, ?, ?, ?::jsonb, '{"h": "v"}'::jsonb,
                        now() - interval '1 minute', 'dead', 3, 'HTTP 400: rejected <b>bold</b>')""", id, topic, "k" + id, id,
                payloadJson);
    }

    /**
     * Writes row {@code id} of {@code outbox_retries} as the relay leaves one (three attempts): with status
     * {@code pending} (waiting for its next attempt, at the SQL expression {@code nextAttempt}) or
     * {@code dead}, written the SQL interval {@code age} ago, with an empty payload.
     */
    public static void insertRetry(DataSource dataSource, long id, String tenant, String topic, String partitionKey,
                                   String status, String age, String nextAttempt, String lastError) {
        run(dataSource, """
                INSERT INTO outbox_retries (event_id, message_id, tenant_id, topic, partition_key, ordering_hash,
                                            payload, headers, created_at, status, attempts, next_attempt_at, last_error)
                VALUES (?, gen_random_uuid(), ?, ?, ?, ?, '{}'::jsonb, '{}'::jsonb, now() - CAST(? AS interval), ?, 3, """
                + nextAttempt + ", ?)", id, tenant, topic, partitionKey, partitionKey.hashCode(), age, status, lastError);
    }

    /** The status of {@code outbox_retries} row {@code id} (pending, dead), or null when there is none. */
    public static String status(DataSource dataSource, long id) {
        try (Connection connection = dataSource.getConnection();
             PreparedStatement select = connection.prepareStatement("SELECT status FROM outbox_retries WHERE event_id = ?")) {
            select.setLong(1, id);
            try (ResultSet rs = select.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        } catch (SQLException e) {
            throw new IllegalStateException("could not read outbox_retries row " + id, e);
        }
    }

    private static void run(DataSource dataSource, String sql, Object... arguments) {
        try (Connection connection = dataSource.getConnection(); PreparedStatement statement = connection.prepareStatement(sql)) {
            for (int i = 0; i < arguments.length; i++) {
                statement.setObject(i + 1, arguments[i]);
            }
            statement.executeUpdate();
        } catch (SQLException e) {
            throw new IllegalStateException("could not write a dead letter into outbox_retries", e);
        }
    }
}
