package dev.idempotency.outbox.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The runnable jar's entry point: {@code java -jar outbox-relay.jar <command>}. */
@Command(name = "outbox-relay", mixinStandardHelpOptions = true, version = "outbox-relay 0.1.0-SNAPSHOT",
        description = "Exactly-once effects on PostgreSQL: the outbox relay process and a demo.",
        subcommands = {DemoCommand.class})
public final class OutboxRelayCli {

    public static void main(String[] args) {
        System.exit(new CommandLine(new OutboxRelayCli()).execute(args));
    }
}
