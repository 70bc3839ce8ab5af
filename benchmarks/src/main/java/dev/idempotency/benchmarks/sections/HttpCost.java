package dev.idempotency.benchmarks.sections;

import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.ClosedLoopLoad;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Section 10: what the Idempotency-Key rules of idempotency-http cost over real HTTP on loopback.
 * One application ({@link HttpPaymentServer}, the JDK's own server) answers the same payment POST
 * plainly and through {@code IdempotentHttp}; at each caller count: the plain POST, the keyed POST
 * with a fresh key per request, and the keyed POST replayed with a stored key. Reported only.
 */
final class HttpCost implements Section {
    static final String PLAIN_CELL = "http POST without the filter: payment";
    static final String KEYED_CELL = "http keyed POST, first run: + key, stored response";
    static final String REPLAY_CELL = "http keyed POST, replay of a stored key";

    @Override
    public String name() {
        return "http";
    }

    @Override
    public String title() {
        return "10 http cost";
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        run.note("Section 10: server and HTTP clients share this JVM, so client CPU/op is both sides' CPU per request.");
        List<ResultRow> rows = new ArrayList<>();
        for (int callers : run.settings().callers()) {
            Measurement plain = cell(run, PLAIN_CELL, callers, HttpPaymentClient.Kind.PLAIN);
            Measurement keyed = cell(run, KEYED_CELL, callers, HttpPaymentClient.Kind.FRESH_KEY);
            Measurement replay = cell(run, REPLAY_CELL, callers, HttpPaymentClient.Kind.REPLAY);
            rows.add(ResultRow.of(title(), PLAIN_CELL, callers, plain));
            rows.add(ResultRow.of(title(), KEYED_CELL, callers, keyed).compared(againstPlain(keyed, plain)));
            rows.add(ResultRow.of(title(), REPLAY_CELL, callers, replay).compared(againstPlain(replay, plain)));
        }
        return rows;
    }

    private static String againstPlain(Measurement keyed, Measurement plain) {
        return String.format(Locale.ROOT, "req/s %s of plain POST; adds p50 %+.3f ms, p99 %+.3f ms",
                Targets.format(Targets.ratio(keyed.opsPerSecond(), plain.opsPerSecond())),
                keyed.p50Millis() - plain.p50Millis(), keyed.p99Millis() - plain.p99Millis());
    }

    /** One cell: a fresh server and pool of {@code callers} connections, as many closed-loop HTTP callers. */
    private static Measurement cell(BenchmarkRun run, String name, int callers, HttpPaymentClient.Kind kind) throws Exception {
        return run.cell(name, callers, () -> {
            try (HttpPaymentServer server = HttpPaymentServer.start(run, callers)) {
                HttpPaymentClient client = new HttpPaymentClient(server.baseUri(), kind, callers);
                return ClosedLoopLoad.run("http-" + kind.name().toLowerCase(Locale.ROOT), callers,
                        run.settings().callerThreads(), run.warmup(name), run.settings().window(), client::call);
            }
        });
    }
}
