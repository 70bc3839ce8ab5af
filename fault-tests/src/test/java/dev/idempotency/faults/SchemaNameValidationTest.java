package dev.idempotency.faults;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.Sweeper;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import dev.idempotency.outbox.OutboxRelayConfig;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.function.Executable;

/**
 * A schema name from configuration is an SQL identifier the library puts into statements, so every
 * entry point that takes one refuses anything but a plain lower-case identifier, with an
 * IllegalArgumentException naming the schema, before any SQL runs.
 */
@Timeout(60)
class SchemaNameValidationTest {
    private static final List<String> BAD_NAMES = List.of(
            "", " ", "Public", "a-b", "1abc", "schema name", "x\"; DROP SCHEMA public CASCADE; --",
            "\"quoted\"", "x;y", "über", "tab\tname", "nul\u0000", "a".repeat(64), "public.other");

    @RegisterExtension
    static final FaultDatabase db = FaultDatabase.perClass();

    @Test
    void everyEntryPointRefusesASchemaNameThatIsNotAPlainIdentifier() {
        DataSource pool = db.pool("validation", 3);
        Map<String, Consumer<String>> entryPoints = Map.of(
                "IdempotencyConfig", name -> IdempotencyConfig.builder().schema(name).build(),
                "IdempotencyMigrations.migrate", name -> IdempotencyMigrations.migrate(pool, name),
                "IdempotencyMigrations.flyway", name -> IdempotencyMigrations.flyway(pool, name),
                "Sweeper", name -> Sweeper.builder(pool).schema(name).build(),
                "OutboxRelayConfig", name -> OutboxRelayConfig.builder().schema(name).build(),
                "OutboxBacklog", name -> OutboxBacklog.builder(pool).schema(name).build(),
                "OutboxDeadLetters", name -> OutboxDeadLetters.builder(pool).schema(name).build());
        StringBuilder accepted = new StringBuilder();
        entryPoints.forEach((entryPoint, use) -> {
            for (String bad : BAD_NAMES) {
                try {
                    use.accept(bad);
                    accepted.append(entryPoint).append(" accepted '").append(bad).append("'\n");
                } catch (IllegalArgumentException e) {
                    if (!e.getMessage().contains("schema")) {
                        accepted.append(entryPoint).append(" refused '").append(bad).append("' without naming the schema: ")
                                .append(e.getMessage()).append('\n');
                    }
                } catch (RuntimeException e) {
                    accepted.append(entryPoint).append(" failed on '").append(bad).append("' with ").append(e).append('\n');
                }
            }
            refusesNull(entryPoint, () -> use.accept(null), accepted);
        });
        assertTrue(accepted.length() == 0, "schema names not refused cleanly:\n" + accepted);
        // A good name still works everywhere (the refusals above were about the names).
        entryPoints.forEach((entryPoint, use) -> use.accept(db.schema()));
    }

    private static void refusesNull(String entryPoint, Executable use, StringBuilder accepted) {
        RuntimeException e = assertThrows(RuntimeException.class, use, entryPoint + " accepted a null schema");
        if (!(e instanceof IllegalArgumentException || e instanceof NullPointerException)
                || !String.valueOf(e.getMessage()).contains("schema")) {
            accepted.append(entryPoint).append(" refused null unclearly: ").append(e).append('\n');
        }
    }
}
