package dev.idempotency.outbox;

import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.MigratedSchema;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A {@link MigratedSchema} with the library's tables, plain-SQL access to the outbox and relay
 * tables, and relay settings short enough for tests. Register it as an extension
 * ({@code @RegisterExtension final OutboxFixture outbox = OutboxFixture.migrated();}) or, for
 * several schemas in one test, {@link #create} it and close it.
 */
final class OutboxFixture implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback, AfterEachCallback,
        AutoCloseable {
    private final MigratedSchema schema;

    private OutboxFixture(MigratedSchema.Builder schema) {
        this.schema = schema.build();
    }

    /** A schema with every migration, made when JUnit starts the class (static field) or test. */
    static OutboxFixture migrated() {
        return new OutboxFixture(MigratedSchema.builder(IdempotencyMigrations::migrate));
    }

    /** A migrated schema, made now; the caller closes it. */
    static OutboxFixture create(String prefix) {
        OutboxFixture fixture = new OutboxFixture(MigratedSchema.builder(IdempotencyMigrations::migrate).prefix(prefix));
        fixture.schema.start();
        return fixture;
    }

    /** A schema migrated only up to {@code version}, as a database made by an older release is; made now. */
    static OutboxFixture createAtVersion(String prefix, String version) {
        OutboxFixture fixture = new OutboxFixture(MigratedSchema.builder((dataSource, schema) ->
                IdempotencyMigrations.migrate(dataSource, schema, version)).prefix(prefix));
        fixture.schema.start();
        return fixture;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        schema.beforeAll(context);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        schema.beforeEach(context);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        schema.afterEach(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        schema.afterAll(context);
    }

    /** Applies the migrations this schema still lacks. */
    void migrate() {
        IdempotencyMigrations.migrate(schema.dataSource(), schema.name());
    }

    String schema() {
        return schema.name();
    }

    DataSource dataSource() {
        return schema.dataSource();
    }

    /** A pool of its own for one relay instance, as a separate process would have. */
    com.zaxxer.hikari.HikariDataSource newPool(int size) {
        return schema.newPool(size);
    }

    /** Settings for tests: 8 partitions, 3 s leases renewed every 300 ms, quick polls and retries. */
    OutboxRelayConfig.Builder config(String instanceId) {
        return OutboxRelayConfig.builder()
                .schema(schema.name())
                .instanceId(instanceId)
                .partitions(8)
                .batchSize(50)
                .maxEventsPerKey(10)
                .leaseDuration(Duration.ofSeconds(3))
                .renewalInterval(Duration.ofMillis(300))
                .publishTimeout(Duration.ofSeconds(1))
                .idlePollMin(Duration.ofMillis(10))
                .idlePollMax(Duration.ofMillis(200))
                .backoffBase(Duration.ofMillis(20))
                .backoffMax(Duration.ofMillis(200))
                .maxAttempts(1000);
    }

    long insert(String tenant, String topic, String partitionKey, String payloadJson) {
        return insert(tenant, topic, partitionKey, payloadJson, "{}");
    }

    long insert(String tenant, String topic, String partitionKey, String payloadJson, String headersJson) {
        try (Connection c = schema.dataSource().getConnection();
             PreparedStatement ps = c.prepareStatement("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload, headers)"
                     + " VALUES (?, ?, ?, ?::jsonb, ?::jsonb) RETURNING id")) {
            ps.setString(1, tenant);
            ps.setString(2, topic);
            ps.setString(3, partitionKey);
            ps.setString(4, payloadJson);
            ps.setString(5, headersJson);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Inserts {@code count} events of one key in one statement (ids in order); returns their ids. */
    List<Long> insertMany(String tenant, String topic, String partitionKey, int count) {
        return longs("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                + " SELECT '" + tenant + "', '" + topic + "', '" + partitionKey + "', jsonb_build_object('n', n)"
                + " FROM generate_series(1, " + count + ") n ORDER BY n RETURNING id");
    }

    /** An event's state as operators see it (view outbox_event_states): pending, published or dead. */
    String status(long id) {
        return string("SELECT status FROM outbox_event_states WHERE id = " + id);
    }

    int attempts(long id) {
        return (int) number("SELECT attempts FROM outbox_event_states WHERE id = " + id);
    }

    String lastError(long id) {
        return string("SELECT last_error FROM outbox_event_states WHERE id = " + id);
    }

    /**
     * How many events of view outbox_event_states (id, message_id, tenant_id, topic, partition_key, created_at, status,
     * attempts, last_error) match.
     */
    long count(String where) {
        return number("SELECT count(*) FROM outbox_event_states WHERE " + where);
    }

    /** Partition to owner of every partition whose lease is current. */
    Map<Integer, String> owners() {
        Map<Integer, String> owners = new TreeMap<>();
        query("SELECT partition_no, owner_id FROM outbox_relay_partitions WHERE lease_expires_at > now()", rs -> {
            owners.put(rs.getInt(1), rs.getString(2));
        });
        return owners;
    }

    /** The partition of an event, computed the way the relay does. */
    int partitionOf(long id, int partitions) {
        return (int) number("SELECT " + RelaySql.partitionOf("ordering_hash", Integer.toString(partitions))
                + " FROM outbox_events WHERE id = " + id);
    }

    void execute(String sql) {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement()) {
            s.execute(sql);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    long number(String sql) {
        List<Long> values = longs(sql);
        return values.isEmpty() ? 0 : values.get(0);
    }

    String string(String sql) {
        List<String> values = new ArrayList<>();
        query(sql, rs -> values.add(rs.getString(1)));
        return values.isEmpty() ? null : values.get(0);
    }

    List<Long> longs(String sql) {
        List<Long> values = new ArrayList<>();
        query(sql, rs -> values.add(rs.getLong(1)));
        return values;
    }

    private interface RowConsumer {
        void accept(ResultSet rs) throws SQLException;
    }

    private void query(String sql, RowConsumer consumer) {
        try (Connection c = schema.dataSource().getConnection(); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery(sql)) {
            while (rs.next()) {
                consumer.accept(rs);
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Waits until every one of {@code ids} has {@code status}, at most {@code timeout}. */
    void awaitStatus(Collection<Long> ids, String status, Duration timeout) {
        String list = ids.stream().map(String::valueOf).reduce((a, b) -> a + "," + b).orElse("0");
        Await.until(ids.size() + " events " + status, timeout,
                () -> count("id IN (" + list + ") AND status = '" + status + "'") == ids.size());
    }

    @Override
    public void close() {
        schema.close();
    }
}
