package dev.idempotency.outbox.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.outbox.OutboxDeadLetter;
import dev.idempotency.outbox.OutboxDeadLetters;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** Lists dead-lettered outbox events, or puts them back in line for publishing. */
@Command(name = "dead-letters", mixinStandardHelpOptions = true,
        description = "List dead-lettered events, or requeue one (--requeue ID) or all (--requeue-all).")
final class DeadLettersCommand implements Callable<Integer> {
    @Mixin
    DatabaseOptions database;

    @Spec
    CommandSpec spec;

    @Option(names = "--limit", defaultValue = "50", description = "How many to list (default: ${DEFAULT-VALUE}).")
    int limit;

    @Option(names = "--requeue", paramLabel = "ID", description = "Requeue the dead letter with this event id.")
    Long requeue;

    @Option(names = "--requeue-all", description = "Requeue every dead letter.")
    boolean requeueAll;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        try (HikariDataSource pool = database.pool("dead-letters", 1)) {
            RequiredTables.require(pool, database.schema, RequiredTables.DEAD_LETTERS);
            OutboxDeadLetters deadLetters = OutboxDeadLetters.builder(pool).schema(database.schema).build();
            if (requeue != null) {
                boolean done = deadLetters.requeue(requeue);
                out.println(done ? "requeued event " + requeue : "no dead letter with id " + requeue);
                return done ? 0 : 1;
            }
            if (requeueAll) {
                out.println("requeued " + deadLetters.requeueAll() + " dead letters");
                return 0;
            }
            out.printf("%d dead letters%n", deadLetters.count());
            for (OutboxDeadLetter letter : deadLetters.list(limit)) {
                out.printf("%d  %s  %s  %s  attempts=%d  %s%n", letter.id(), letter.tenant(), letter.topic(),
                        letter.partitionKey(), letter.attempts(), letter.lastError());
            }
            return 0;
        }
    }
}
