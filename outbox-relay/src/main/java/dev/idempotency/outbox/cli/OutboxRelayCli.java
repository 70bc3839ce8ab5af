package dev.idempotency.outbox.cli;

import dev.idempotency.outbox.OutboxSchemaException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The runnable jar's entry point: {@code java -jar outbox-relay.jar <command>}. */
@Command(name = "outbox-relay", mixinStandardHelpOptions = true, version = "outbox-relay 0.1.0-SNAPSHOT",
        description = "Exactly-once effects on PostgreSQL: the outbox relay process and a demo.",
        subcommands = {DemoCommand.class, RunCommand.class, MigrateCommand.class, DeadLettersCommand.class})
public final class OutboxRelayCli {

    public static void main(String[] args) {
        CommandLine commandLine = new CommandLine(new OutboxRelayCli())
                .setExecutionExceptionHandler((error, command, parsed) -> {
                    // A bad setting or schema is the operator's to fix: say which, without a stack trace.
                    if (error instanceof IllegalArgumentException || error instanceof OutboxSchemaException) {
                        command.getErr().println("error: " + error.getMessage());
                        return 2;
                    }
                    throw error;
                });
        System.exit(commandLine.execute(args));
    }
}
