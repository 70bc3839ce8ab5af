package dev.idempotency.outbox.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.outbox.OutboxRelayConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/** What the command line says about its own flags: one line for a bad one, and each option's default. */
class CommandLineUsageTest {
    private static final Pattern DEFAULT = Pattern.compile("default: ([^;)]+)\\)");
    /** The run flags whose defaults are OutboxRelayConfig's, and where the config keeps each. */
    private static final Map<String, Function<OutboxRelayConfig, Object>> RELAY_DEFAULTS = Map.of(
            "--partitions", OutboxRelayConfig::partitions, "--batch-size", OutboxRelayConfig::batchSize,
            "--lease", OutboxRelayConfig::leaseDuration, "--renewal-interval", OutboxRelayConfig::renewalInterval,
            "--max-attempts", OutboxRelayConfig::maxAttempts, "--idle-poll-max", OutboxRelayConfig::idlePollMax,
            "--linger", OutboxRelayConfig::linger, "--position-write-interval", OutboxRelayConfig::positionWriteInterval,
            "--read-ahead", OutboxRelayConfig::readAhead);

    @Test
    void anUnknownFlagGetsOneErrorLineAndAHintNamingTheNearestFlagNotTheUsage() {
        List<String> lines = refused("run", "--publsher", "log");

        assertEquals("error: Unknown options: '--publsher', 'log'", lines.get(0));
        assertTrue(lines.get(1).startsWith("did you mean --publisher") && lines.get(1).endsWith("see 'outbox-relay run --help'"),
                lines.get(1));
    }

    @Test
    void aValueThatIsNoDurationGetsOneErrorLineAndTheHelpHint() {
        List<String> lines = refused("run", "--lease", "forever");

        assertTrue(lines.get(0).startsWith("error: Invalid value for option '--lease': 'forever' is not a duration"), lines.get(0));
        assertEquals("see 'outbox-relay run --help' for the options", lines.get(1));
    }

    @Test
    void everyRunOptionSaysItsDefault() {
        for (OptionSpec option : run().options()) {
            if (option.usageHelp() || option.versionHelp()) {
                continue;
            }
            assertTrue(description(option).contains("default: "), option.longestName() + ": " + description(option));
        }
    }

    @Test
    void theRelayDefaultsRunStatesAreTheRelayConfigsOwn() {
        OutboxRelayConfig defaults = OutboxRelayConfig.builder().build();
        DurationConverter durations = new DurationConverter();
        RELAY_DEFAULTS.forEach((flag, setting) -> {
            Matcher stated = DEFAULT.matcher(description(run().findOption(flag)));
            assertTrue(stated.find(), flag);
            Object actual = setting.apply(defaults);
            Object expected = actual instanceof Integer ? Integer.valueOf(stated.group(1))
                    : actual instanceof Boolean ? Boolean.valueOf(stated.group(1)) : durations.convert(stated.group(1));
            assertEquals(actual, expected, flag);
        });
    }

    private static CommandLine.Model.CommandSpec run() {
        return OutboxRelayCli.commandLine().getSubcommands().get("run").getCommandSpec();
    }

    /** The option's description as --help shows it, ${DEFAULT-VALUE} filled in. */
    private static String description(OptionSpec option) {
        return String.join(" ", option.description()).replace("${DEFAULT-VALUE}", String.valueOf(option.defaultValue()));
    }

    /** What the command line printed when it refused {@code args}: exit code 2, two lines, nothing on stdout. */
    private static List<String> refused(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int exitCode = OutboxRelayCli.commandLine().setOut(new PrintWriter(out, true)).setErr(new PrintWriter(err, true))
                .execute(args);
        assertEquals(2, exitCode, err.toString());
        assertEquals("", out.toString());
        List<String> lines = err.toString().lines().toList();
        assertEquals(2, lines.size(), err.toString());
        return lines;
    }
}
