package dev.idempotency.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.IdempotentExecutor;
import dev.idempotency.core.KeyReusedException;
import dev.idempotency.core.RequestFingerprint;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.spring.boot.actuate.IdempotencyHealthAutoConfiguration;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.MigratedSchema;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The auto-configuration on a real PostgreSQL: each test gets an empty schema of its own, which the
 * starter migrates, and an application context built from the starter's auto-configurations. One of
 * the tests each Spring Boot line's starter runs on its own Boot (idempotency-spring-boot-autoconfigure's
 * src/shared-test).
 */
class IdempotencyAutoConfigurationTest {
    /** Spring Boot's Flyway auto-configuration, wherever this line keeps it. */
    static final Class<?> FLYWAY_AUTO_CONFIGURATION = firstPresent(
            "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
            "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration");

    static Class<?> firstPresent(String... names) {
        for (String name : names) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException absent) {
                // the other line's
            }
        }
        throw new IllegalStateException("none of " + List.of(names) + " is on the class path");
    }

    @RegisterExtension
    final MigratedSchema db = MigratedSchema.builder(MigratedSchema.Migration.NONE).prefix("starter").build();

    private ApplicationContextRunner runner() {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(IdempotencyMetricsAutoConfiguration.class,
                        IdempotencyAutoConfiguration.class, IdempotencyHealthAutoConfiguration.class))
                .withBean(DataSource.class, () -> db.newPool(6), definition -> definition.setDestroyMethodName("close"))
                .withPropertyValues("idempotency.schema=" + db.name());
    }

    private int count(String sql) {
        return Jdbi.create(db.dataSource()).withHandle(h -> h.createQuery(sql).mapTo(Integer.class).one());
    }

    @Test
    void migratesTheSchemaWithTheLibrarysMigratorAndRunsTheExecutorOnTheApplicationsDataSource() {
        runner().run(context -> {
            assertThat(context).hasNotFailed();
            @SuppressWarnings("unchecked")
            IdempotentExecutor<PostgresTransaction> executor = context.getBean(IdempotentExecutor.class);
            var first = executor.run("k1", "t1", tx -> Map.of("paid", 1));
            var replay = executor.run("k1", "t1", tx -> Map.of("paid", 2));
            assertThat(first.replayed()).isFalse();
            assertThat(replay.replayed()).isTrue();
            assertThat(replay.result()).isEqualTo(first.result());
            assertThat(count("SELECT count(*) FROM " + db.name() + ".idempotency_schema_history WHERE success"))
                    .isGreaterThanOrEqualTo(3);
        });
    }

    @Test
    void theExecutorJoinsSpringsTransactionSoARollbackTakesTheKeyAndTheWritesAlong() {
        runner().run(context -> {
            @SuppressWarnings("unchecked")
            IdempotentExecutor<PostgresTransaction> executor = context.getBean(IdempotentExecutor.class);
            DataSource dataSource = context.getBean(DataSource.class);
            new org.springframework.jdbc.core.JdbcTemplate(dataSource)
                    .execute("CREATE TABLE " + db.name() + ".notes (note text)");
            TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
            var jdbc = new org.springframework.jdbc.core.JdbcTemplate(dataSource);
            transactions.executeWithoutResult(status -> {
                jdbc.update("INSERT INTO " + db.name() + ".notes VALUES ('mine')");
                executor.run("joined", "t1", tx -> {
                    tx.outbox().publish("notes", "n1", Map.of("note", "mine"));
                    return "ok";
                });
                status.setRollbackOnly();
            });
            assertThat(count("SELECT count(*) FROM " + db.name() + ".notes")).isZero();
            assertThat(count("SELECT count(*) FROM " + db.name() + ".idempotency_keys")).isZero();
            assertThat(count("SELECT count(*) FROM " + db.name() + ".outbox_events")).isZero();

            transactions.executeWithoutResult(status -> {
                jdbc.update("INSERT INTO " + db.name() + ".notes VALUES ('mine')");
                executor.run("joined", "t1", tx -> "ok");
            });
            assertThat(count("SELECT count(*) FROM " + db.name() + ".notes")).isEqualTo(1);
            assertThat(count("SELECT count(*) FROM " + db.name() + ".idempotency_keys")).isEqualTo(1);
        });
    }

    @Test
    void sweeperRunsByDefaultAndRelayIsOffByDefault() {
        runner().run(context -> {
            assertThat(context).hasSingleBean(SweeperLifecycle.class);
            assertThat(context.getBean(SweeperLifecycle.class).isRunning()).isTrue();
            assertThat(context).doesNotHaveBean(RelayLifecycle.class);
            assertThat(context).doesNotHaveBean("outboxRelayHealthIndicator");
        });
        runner().withPropertyValues("idempotency.sweeper.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(SweeperLifecycle.class));
    }

    @Test
    void nothingIsConfiguredWhenDisabled() {
        runner().withPropertyValues("idempotency.enabled=false")
                .run(context -> assertThat(context).doesNotHaveBean(IdempotentExecutor.class));
    }

    @Test
    void countsEveryExecutorOutcomeOnTheApplicationsRegistry() {
        runner().withBean(MeterRegistry.class, SimpleMeterRegistry::new).run(context -> {
            @SuppressWarnings("unchecked")
            IdempotentExecutor<PostgresTransaction> executor = context.getBean(IdempotentExecutor.class);
            RequestFingerprint a = RequestFingerprint.ofString("POST /a 1");
            RequestFingerprint b = RequestFingerprint.ofString("POST /a 2");
            executor.run("k1", "t1", a, tx -> "ok");
            executor.run("k1", "t1", a, tx -> "ok");
            assertThatThrownBy(() -> executor.run("k1", "t1", b, tx -> "ok")).isInstanceOf(KeyReusedException.class);
            assertThatThrownBy(() -> executor.run("k2", "t1", tx -> {
                throw new BusinessFailure("declined", "card declined");
            })).isInstanceOf(BusinessFailure.class);
            assertThatThrownBy(() -> executor.run("k2", "t1", tx -> "never")).isInstanceOf(BusinessFailure.class);
            assertThatThrownBy(() -> executor.run("k3", "t1", tx -> {
                throw new IllegalStateException("bug");
            })).isInstanceOf(IllegalStateException.class);

            MeterRegistry registry = context.getBean(MeterRegistry.class);
            assertThat(calls(registry, "first_run", "false")).isEqualTo(1);
            assertThat(calls(registry, "replay", "true")).isEqualTo(1);
            assertThat(calls(registry, "key_reused", "false")).isEqualTo(1);
            assertThat(calls(registry, "business_failure", "false")).isEqualTo(1);
            assertThat(calls(registry, "business_failure", "true")).isEqualTo(1);
            assertThat(calls(registry, "error", "false")).isEqualTo(1);
            assertThat(registry.find(MicrometerExecutorOutcomes.METER).tag("outcome", "in_progress").counter())
                    .isNotNull();
            assertThat(registry.find(MicrometerExecutorOutcomes.METER).tag("outcome", "transient_failure").counter())
                    .isNotNull();
        });
    }

    private static double calls(MeterRegistry registry, String outcome, String replayed) {
        return registry.get(MicrometerExecutorOutcomes.METER).tag("outcome", outcome).tag("replayed", replayed)
                .counter().count();
    }

    @Test
    void relayBeanPublishesCommittedEventsCountsThemAndStopsWithTheContext() {
        String[] relayId = new String[1];
        runner().withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .withPropertyValues("idempotency.relay.enabled=true", "idempotency.relay.publisher=log",
                        "idempotency.relay.partitions=4", "idempotency.relay.idle-poll-max=5s",
                        "idempotency.relay.metrics-refresh-interval=100ms")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    RelayLifecycle relay = context.getBean(RelayLifecycle.class);
                    assertThat(relay.isRunning()).isTrue();
                    relayId[0] = relay.relay().orElseThrow().instanceId();
                    @SuppressWarnings("unchecked")
                    IdempotentExecutor<PostgresTransaction> executor = context.getBean(IdempotentExecutor.class);
                    long start = System.nanoTime();
                    executor.run("k1", "t1", tx -> {
                        tx.outbox().publish("payments", "p1", Map.of("amount", 5));
                        return "ok";
                    });
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    Await.until("the published counter at 1", () -> registry.get("outbox.events.published").counter().count() == 1.0);
                    // Woken by the commit, not by its 5 s idle poll.
                    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(4));
                    // The relay writes a keeping-up position at most once per positionWriteInterval (100 ms by
                    // default), so the database says "published" shortly after the meter does.
                    Await.until("the event published",
                            () -> count("SELECT count(*) FROM " + db.name() + ".outbox_event_states WHERE status = 'published'") == 1);
                    Await.until("the backlog gauge registered", () -> registry.find("outbox.backlog.events").gauge() != null);
                    // Its details over HTTP: RelayOverHttpTest.
                    assertThat(context).hasBean("outboxRelayHealthIndicator");
                });
        // Closing the context stopped the relay gracefully: its heartbeat row is gone.
        assertThat(count("SELECT count(*) FROM " + db.name() + ".outbox_relay_instances WHERE instance_id = '"
                + relayId[0] + "'")).isZero();
    }

    @Test
    void aPublisherOnTheClassPathIsChosenByItsNameAndGetsItsSettings() {
        runner().withPropertyValues("idempotency.relay.enabled=true",
                        "idempotency.relay.publisher=" + RecordingPublisherProvider.NAME,
                        "idempotency.relay.settings.label=orders", "idempotency.relay.partitions=4")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    RecordingPublisherProvider.Recording publisher =
                            (RecordingPublisherProvider.Recording) context.getBean(Publisher.class);
                    assertThat(publisher.settings).isEqualTo(Map.of("label", "orders"));
                    @SuppressWarnings("unchecked")
                    IdempotentExecutor<PostgresTransaction> executor = context.getBean(IdempotentExecutor.class);
                    executor.run("k1", "t1", tx -> {
                        tx.outbox().publish("payments", "p1", Map.of("amount", 5));
                        return "ok";
                    });
                    Await.until("the event at the custom publisher", () -> publisher.topics.equals(List.of("payments")));
                });
    }

    @Test
    void anUnknownPublisherFailsTheContextNamingThePublishersFound() {
        runner().withPropertyValues("idempotency.relay.enabled=true", "idempotency.relay.publisher=kafak")
                .run(context -> assertThat(context).hasFailed().getFailure().hasStackTraceContaining(
                        "unknown publisher 'kafak'; publishers on the class path: http, kafka, log, nats, rabbitmq, "
                                + RecordingPublisherProvider.NAME));
    }

    @Test
    void aBadPublisherSettingFailsTheContextAtStartup() {
        runner().withPropertyValues("idempotency.relay.enabled=true", "idempotency.relay.publisher=rabbitmq",
                        "idempotency.relay.settings.no-such-setting=1")
                .run(context -> assertThat(context).hasFailed().getFailure()
                        .hasStackTraceContaining("no-such-setting"));
    }

    @Test
    void withTheApplicationsFlywayTheLibraryMigratesAfterItIntoItsOwnHistoryTable() {
        runner().withConfiguration(AutoConfigurations.of(FLYWAY_AUTO_CONFIGURATION))
                .withPropertyValues("spring.flyway.locations=classpath:db/migration/app",
                        "spring.flyway.schemas=" + db.name(), "spring.flyway.default-schema=" + db.name())
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(count("SELECT count(*) FROM " + db.name() + ".flyway_schema_history WHERE version = '1'"))
                            .isEqualTo(1);
                    assertThat(count("SELECT count(*) FROM " + db.name()
                            + ".idempotency_schema_history WHERE version IN ('1', '2', '3') AND success")).isEqualTo(3);
                    assertThat(count("SELECT count(*) FROM " + db.name() + ".application_things")).isZero();
                });
    }

    /** An application's bean that reads the library's table when it is created. */
    @Configuration(proxyBeanMethods = false)
    static class ReadsTheKeysAtStartup {
        @Bean
        JdbcTemplate jdbcTemplate(DataSource dataSource) {
            return new JdbcTemplate(dataSource);
        }

        @Bean
        Integer keysAtStartup(JdbcTemplate jdbc) {
            return jdbc.queryForObject("SELECT count(*) FROM idempotency_keys", Integer.class);
        }
    }

    @Test
    void anApplicationBeanOnAJdbcTemplateWaitsForTheLibrarysMigrations() {
        runner().withUserConfiguration(ReadsTheKeysAtStartup.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean("keysAtStartup", Integer.class)).isZero();
        });
    }

    @Test
    void customizersAdjustTheExecutorsSettingsAfterTheProperties() {
        runner().withPropertyValues("idempotency.wait-budget=2s")
                .withBean("first", IdempotencyConfigCustomizer.class, () -> config -> config.maxResultBytes(1234))
                .withBean("second", IdempotencyConfigCustomizer.class, () -> config -> config.allowResultTypes(Note.class))
                .run(context -> {
                    IdempotencyConfig config = context.getBean(IdempotencyConfig.class);
                    assertThat(config.waitBudget()).isEqualTo(Duration.ofSeconds(2));
                    assertThat(config.maxResultBytes()).isEqualTo(1234);
                    assertThat(config.allowedResultTypes()).contains(Note.class);
                });
    }

    record Note(String text) {
    }

    @Test
    void flywayModeWithoutFlywayFailsWithAMessageNamingTheFix() {
        runner().withPropertyValues("idempotency.migrations.mode=flyway")
                .run(context -> assertThat(context).hasFailed().getFailure()
                        .hasStackTraceContaining("idempotency.migrations.mode=library"));
    }

    @Test
    void migrationsModeNoneLeavesTheSchemaAlone() {
        runner().withPropertyValues("idempotency.migrations.mode=none", "idempotency.sweeper.enabled=false")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(count("SELECT count(*) FROM information_schema.tables WHERE table_schema = '"
                            + db.name() + "'")).isZero();
                });
    }

    @Test
    void theApplicationsOwnExecutorBeanWins() {
        IdempotentExecutor<?> own = new ObservedIdempotentExecutor(
                dev.idempotency.jdbc.PostgresIdempotentExecutor.builder(db.dataSource()).build(), (o, r) -> { });
        runner().withBean("myExecutor", IdempotentExecutor.class, () -> own)
                .run(context -> assertThat(context.getBean(IdempotentExecutor.class)).isSameAs(own));
    }

    @Test
    void propertyMetadataIsGeneratedForIdes() throws Exception {
        try (var in = getClass().getResourceAsStream("/META-INF/spring-configuration-metadata.json")) {
            assertThat(in).isNotNull();
            String json = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            assertThat(json).contains("\"idempotency.wait-budget\"", "\"idempotency.http.replayed-headers\"",
                    "\"idempotency.relay.publisher\"", "\"idempotency.migrations.mode\"",
                    "\"idempotency.sweeper.interval\"");
        }
    }
}
