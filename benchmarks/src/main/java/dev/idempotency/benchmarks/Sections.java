package dev.idempotency.benchmarks;

import java.util.List;

/** The sections the program knows, in the table's order. */
final class Sections {
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
            new TracingCost());

    private Sections() {
    }

    static List<Section> all() {
        return ALL;
    }

    static List<String> names() {
        return ALL.stream().map(Section::name).toList();
    }

    /** The sections a run that names none runs. */
    static List<String> defaultNames() {
        return ALL.stream().filter(Section::runsByDefault).map(Section::name).toList();
    }

    static Section named(String name) {
        return ALL.stream().filter(s -> s.name().equals(name)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown section '" + name + "'; known: " + names()));
    }
}
