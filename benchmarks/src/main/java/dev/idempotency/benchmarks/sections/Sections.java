package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.Section;
import java.util.List;

/** The sections the program knows, in the table's order. */
public final class Sections {
    /** The section that measures through a PgBouncer, which needs --pgbouncer-url and runs only when named. */
    public static final String PGBOUNCER = ExecutorBehindPgBouncer.NAME;

    private static final List<Section> ALL = List.of(
            new ExecutorVsPgbench(),
            new ExecutorOverhead(),
            new RedisAlternative(),
            new DuplicateStorm(),
            new RelayThroughput(),
            new RelayLatency(),
            new PeerOutbox(),
            new SweeperThroughput(),
            new RelayCost(),
            new HttpCost(),
            new ExecutorBehindPgBouncer(),
            new KeyLockTrigger(),
            new TracingCost(),
            new RelayVsBrokerClient(),
            new ConsumerThroughput());

    private Sections() {
    }

    static List<Section> all() {
        return ALL;
    }

    public static List<String> names() {
        return ALL.stream().map(Section::name).toList();
    }

    /** The sections a run that names none runs. */
    public static List<String> defaultNames() {
        return ALL.stream().filter(Section::runsByDefault).map(Section::name).toList();
    }

    public static Section named(String name) {
        return ALL.stream().filter(s -> s.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown section '" + name + "'; known: " + names()));
    }
}
