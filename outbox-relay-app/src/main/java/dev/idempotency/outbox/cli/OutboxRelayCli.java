package dev.idempotency.outbox.cli;

import com.zaxxer.hikari.pool.HikariPool;
import dev.idempotency.core.SchemaNotMigratedException;
import dev.idempotency.jdbc.PoolerBreaksPreparedStatementsException;
import dev.idempotency.outbox.OutboxSchemaException;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The runnable jar's entry point: {@code java -jar outbox-relay.jar <command>}. */
@Command(name = "outbox-relay", mixinStandardHelpOptions = true, version = "outbox-relay 0.1.0-SNAPSHOT",
        description = "Exactly-once effects on PostgreSQL: the outbox relay process and a demo.",
        subcommands = {DemoCommand.class, RunCommand.class, MigrateCommand.class, DeadLettersCommand.class})
public final class OutboxRelayCli {
    /** Exit code when a setting, or the database's state, must be fixed before the command can run. */
    static final int EXIT_FIX_AND_RETRY = 2;
    /** Exit code when the database could not be reached. */
    static final int EXIT_NO_DATABASE = 1;

    public static void main(String[] args) {
        System.exit(commandLine().execute(args));
    }

    /** The command line with its error handling: what {@link #main} runs, and what tests run in-process. */
    static CommandLine commandLine() {
        return new CommandLine(new OutboxRelayCli()).setParameterExceptionHandler(OutboxRelayCli::badArguments)
                .setExecutionExceptionHandler((error, command, parsed) -> {
            // What the operator must fix is in the message; a stack trace would only hide it.
            if (error instanceof IllegalArgumentException || error instanceof SchemaNotReadyException
                    || error instanceof OutboxSchemaException || error instanceof SchemaNotMigratedException
                    || error instanceof PoolerBreaksPreparedStatementsException) {
                command.getErr().println("error: " + error.getMessage());
                return EXIT_FIX_AND_RETRY;
            }
            if (error instanceof EmbeddedDatabase.NotStarted) {
                command.getErr().println("error: " + error.getMessage());
                return EXIT_NO_DATABASE;
            }
            if (error instanceof HikariPool.PoolInitializationException) {
                Throwable cause = error.getCause() == null ? error : error.getCause();
                command.getErr().println("error: cannot connect to the database: " + cause.getMessage()
                        + " (check --jdbc-url, --db-user and --db-password)");
                return EXIT_NO_DATABASE;
            }
            throw error;
        });
    }

    /**
     * A flag or value the command line refuses: one {@code error:} line and one hint, not the whole
     * usage, which would push the error out of sight.
     */
    private static int badArguments(CommandLine.ParameterException error, String[] args) {
        CommandLine command = error.getCommandLine();
        PrintWriter err = command.getErr();
        err.println("error: " + error.getMessage());
        List<String> suggestions = error instanceof CommandLine.UnmatchedArgumentException unmatched
                ? unmatched.getSuggestions() : List.of();
        String help = "'" + command.getCommandSpec().qualifiedName() + " --help'";
        err.println(suggestions.isEmpty() ? "see " + help + " for the options"
                : "did you mean " + String.join(" or ", suggestions) + "? see " + help);
        return command.getCommandSpec().exitCodeOnInvalidInput();
    }
}
