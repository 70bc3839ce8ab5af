package dev.idempotency.outbox.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.db.IdempotencyMigrations;
import java.util.concurrent.Callable;
import org.flywaydb.core.api.output.MigrateResult;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** Applies the library's migrations and says what it did. */
@Command(name = "migrate", mixinStandardHelpOptions = true, description = "Apply the library's migrations to the schema.")
final class MigrateCommand implements Callable<Integer> {
    @Mixin
    DatabaseOptions database;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        // One connection is all migrating takes.
        try (HikariDataSource pool = database.pool("migrate", 1)) {
            MigrateResult result = IdempotencyMigrations.migrate(pool, database.schema);
            spec.commandLine().getOut().printf("schema %s: %d migrations applied, now at version %s%n", database.schema,
                    result.migrationsExecuted, result.targetSchemaVersion == null ? "(unchanged)" : result.targetSchemaVersion);
            return 0;
        }
    }
}
