package dev.idempotency.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import dev.idempotency.console.OutboxConsole;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.http.IdempotentHttpConfig;
import dev.idempotency.jdbc.Sweeper;
import dev.idempotency.outbox.OutboxRelayConfig;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

/**
 * A Spring application that sets no {@code idempotency.*} property gets the library's own defaults: each
 * property's default is the builder's, as docs/reference.md's table promises (Spring Boot's
 * FlywayPropertiesTests keeps its properties and Flyway's defaults together the same way). Run by each
 * Spring Boot line's starter (src/shared-test).
 */
class DefaultsAgreeTest {
    private final IdempotencyProperties spring = new Binder(new MapConfigurationPropertySource(Map.of()))
            .bindOrCreate("idempotency", IdempotencyProperties.class);

    @Test
    void theExecutorsPropertiesDefaultToTheBuildersDefaults() {
        IdempotencyConfig library = IdempotencyConfig.defaults();

        assertThat(spring.schema()).isEqualTo(library.schema());
        assertThat(spring.retention()).isEqualTo(library.retention());
        assertThat(spring.waitBudget()).isEqualTo(library.waitBudget());
        assertThat(spring.maxResultBytes()).isEqualTo(library.maxResultBytes());
        assertThat(spring.maxOutboxPayloadBytes()).isEqualTo(library.maxOutboxPayloadBytes());
    }

    @Test
    void theHttpPropertiesDefaultToTheBuildersDefaults() {
        IdempotentHttpConfig library = IdempotentHttpConfig.defaults();
        IdempotencyProperties.Http http = spring.http();

        assertThat(http.methods()).containsExactlyInAnyOrderElementsOf(library.methods());
        assertThat(http.replayedHeaders().stream().map(h -> h.toLowerCase(Locale.ROOT)).collect(Collectors.toSet()))
                .isEqualTo(library.replayedHeaders());
        assertThat(http.maxResponseBytes()).isEqualTo(library.maxStoredBodyBytes());
        assertThat(http.storedClientErrors()).containsExactlyInAnyOrderElementsOf(library.storedClientErrors());
        assertThat(http.retryAfter()).isEqualTo(library.retryAfter());
        assertThat(http.keySyntax()).isEqualTo(library.keySyntax());
    }

    @Test
    void theRelayAndSweeperPropertiesDefaultToTheBuildersDefaults() {
        OutboxRelayConfig relay = OutboxRelayConfig.builder().build();

        assertThat(spring.relay().partitions()).isEqualTo(relay.partitions());
        assertThat(spring.relay().batchSize()).isEqualTo(relay.batchSize());
        assertThat(spring.relay().idlePollMax()).isEqualTo(relay.idlePollMax());
        assertThat(spring.relay().linger()).isEqualTo(relay.linger());
        assertThat(spring.relay().positionWriteInterval()).isEqualTo(relay.positionWriteInterval());
        assertThat(spring.sweeper().interval()).isEqualTo(Sweeper.DEFAULT_INTERVAL);
        assertThat(spring.sweeper().batchSize()).isEqualTo(Sweeper.DEFAULT_BATCH_SIZE);
    }

    @Test
    void theConsoleIsOffByDefaultWithActionsAtTheDocumentedPathWhichTheConsoleAccepts() {
        IdempotencyProperties.Console console = spring.console();

        assertThat(console.enabled()).isFalse();
        assertThat(console.readOnly()).isFalse();
        assertThat(console.path()).isEqualTo("/idempotency/console");
        assertThatCode(() -> OutboxConsole.builder(new PGSimpleDataSource()).basePath(console.path()).build())
                .doesNotThrowAnyException();
    }
}
