package dev.idempotency.benchmarks.sections;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.benchmarks.harness.BenchmarkRun;
import dev.idempotency.benchmarks.harness.BenchmarkSql;
import dev.idempotency.benchmarks.harness.ClientCost;
import dev.idempotency.benchmarks.harness.ClientWindow;
import dev.idempotency.benchmarks.harness.Measurement;
import dev.idempotency.benchmarks.harness.ResultRow;
import dev.idempotency.benchmarks.harness.Section;
import dev.idempotency.benchmarks.harness.Targets;
import dev.idempotency.benchmarks.harness.Warmup;
import dev.idempotency.jdbc.IdempotentBatchConsumer;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.statement.PreparedBatch;

/**
 * Section 15: consumers exactly once at broker speed (issue 38). For each broker's own batch API
 * (a JetStream pull consumer's iterate(), RabbitMQ prefetch with one multiple ack, Kafka poll) and batch size,
 * messages/s consumed exactly once by {@link IdempotentBatchConsumer} into one payment insert each and
 * acknowledged after its commit, in both of its modes (a handler call per message, each insert a
 * statement; one call for the batch, the inserts one JDBC batch), next to the same broker's raw
 * consume-and-ack rate (the same messages in the same batches, acknowledged with no database) and to
 * the same inserts alone in a transaction per batch, written both ways; the five are measured in the
 * same rounds. Targets at batch 100, for each mode: at least 30,000 messages/s, and at least 0.5 of raw.
 * At batch 100, also {@value #SIDE_BY_SIDE} consumers side by side, each on a destination of its own (as
 * a service's consumers each read their own partitions), exactly once and raw, and pgbench on as many
 * connections: one consumer waits for the broker and for PostgreSQL in turn, several overlap them.
 */
final class ConsumerThroughput implements Section {
    static final int[] BATCHES = {1, 10, 100, 500};
    static final int TARGET_BATCH = 100;
    static final double FLOOR = 30_000;
    static final double RATIO_FLOOR = 0.5;
    /** Messages of a cell: 2,000 batches, at most --consumer-messages. */
    private static final int BATCHES_PER_CELL = 2_000;
    /** How long a cell waits for messages its destination holds before it fails. */
    private static final Duration STALL = Duration.ofSeconds(30);

    static final String TITLE = "15 consumers exactly once";
    /** The database's part alone, the same for each broker: measured with each broker's cells. */
    static final String BARE_INSERTS_CELL = "payment inserts, one bare transaction per batch";
    static final String BARE_BATCHED_INSERTS_CELL = "payment inserts as one JDBC batch, one bare transaction per batch";
    /** consumeAll on messages made in this JVM, at {@link #TARGET_BATCH}: the consumer's own rate, without a broker's delivery and acks. */
    static final String NO_BROKER_CELL = "consumeAll, messages made in the JVM, no broker";
    /** consumeAll's exact statements for a batch of {@link #TARGET_BATCH} new messages, sent by pgbench: the SQL's own limit. */
    static final String PGBENCH_SCRIPT = "consumer-batch-100.sql";
    /** Consumers side by side in the cells that measure them, at {@link #TARGET_BATCH}. */
    static final int SIDE_BY_SIDE = 2;

    @Override
    public String name() {
        return "consumers";
    }

    @Override
    public String title() {
        return TITLE;
    }

    /** Needs NATS and RabbitMQ, and starts Kafka in this JVM: runs when named. */
    @Override
    public boolean runsByDefault() {
        return false;
    }

    @Override
    public List<ResultRow> run(BenchmarkRun run) throws Exception {
        List<ResultRow> rows = new ArrayList<>();
        try (ConsumerBroker jetStream = JetStreamConsumerBroker.connect(run.settings().relay().natsUrl())) {
            rows.addAll(rows(run, jetStream));
        }
        try (ConsumerBroker rabbitMq = RabbitMqConsumerBroker.connect(run.settings().relay().rabbitMqUrl())) {
            rows.addAll(rows(run, rabbitMq));
        }
        try (ConsumerBroker kafka = KafkaConsumerBroker.start()) {
            rows.addAll(rows(run, kafka));
        }
        run.note("Section 15: callers = batch size. Each cell fills a destination of its own, not timed (a JetStream "
                + "stream in memory storage read by a durable pull consumer's iterate(), pulls of up to 2 x batch outstanding; "
                + "a RabbitMQ queue, prefetch = batch; a one-partition Kafka topic on "
                + "test-support's single-node KafkaTestBroker, in this JVM where Docker is missing), then consumes "
                + "min(--consumer-messages, " + BATCHES_PER_CELL + " x batch) messages after its warm-up, timed from the "
                + "first batch fetched to the last acknowledged. Exactly once: IdempotentBatchConsumer (pool of 1, the "
                + "library's defaults) inserting one payment per message through tx.handle(), then the acks: with "
                + "consume, a handler call and an insert statement per message; with consumeAll, one handler call "
                + "for the batch's new messages and their inserts as one Jdbi PreparedBatch (pgjdbc's executeBatch, "
                + "one round trip); raw: the same fetch and acks, no database; bare inserts: the same payment "
                + "inserts through a Jdbi handle, a statement each or one PreparedBatch, one transaction per batch, no "
                + "broker nor consumer (the database's own rate for this work); at batch 100, pgbench sending consumeAll's "
                + "statements for a batch of new messages (" + PGBENCH_SCRIPT + ", one connection, its transactions "
                + "counted as 100 messages each); at batch 100, consumeAll as above on new messages made in the JVM, "
                + "nothing fetched nor acknowledged (the consumer's own rate); and at batch 100, " + SIDE_BY_SIDE
                + " consumers side by side, each on a destination of its own holding its share and on a thread and a "
                + "connection of its own, warmed up, then timed together (consumeAll and raw), next to pgbench on "
                + SIDE_BY_SIDE + " connections. p50/p99: one batch, fetch to ack. Acks: JetStream ack() per message; "
                + "RabbitMQ one basicAck(lastTag, multiple) per batch; Kafka commitSync after each batch. Client CPU for "
                + "an in-JVM Kafka includes the broker's.");
        return rows;
    }

    private static List<ResultRow> rows(BenchmarkRun run, ConsumerBroker broker) throws Exception {
        List<ResultRow> rows = new ArrayList<>();
        int setting = run.settings().relay().consumerMessages();
        for (int batch : BATCHES) {
            int messages = Math.min(setting, BATCHES_PER_CELL * batch);
            List<BenchmarkRun.Cell> group = new ArrayList<>(List.of(
                    new BenchmarkRun.Cell(broker.label() + ", exactly once into payments, a call per message", batch,
                            () -> exactlyOnce(run, broker, batch, messages, false, 1)),
                    new BenchmarkRun.Cell(broker.label() + ", exactly once into payments, a call per batch", batch,
                            () -> exactlyOnce(run, broker, batch, messages, true, 1)),
                    new BenchmarkRun.Cell(broker.label() + ", raw consume and ack", batch,
                            () -> raw(run, broker, batch, messages, 1)),
                    new BenchmarkRun.Cell(BARE_INSERTS_CELL, batch, () -> bareInserts(run, batch, messages, false)),
                    new BenchmarkRun.Cell(BARE_BATCHED_INSERTS_CELL, batch, () -> bareInserts(run, batch, messages, true))));
            if (batch == TARGET_BATCH) {
                group.add(new BenchmarkRun.Cell(PGBENCH_SCRIPT, batch, () -> pgbenchPerMessage(run, 1)));
                group.add(new BenchmarkRun.Cell(broker.label() + ", exactly once into payments, a call per batch, "
                        + SIDE_BY_SIDE + " consumers", batch, () -> exactlyOnce(run, broker, batch, messages, true, SIDE_BY_SIDE)));
                group.add(new BenchmarkRun.Cell(broker.label() + ", raw consume and ack, " + SIDE_BY_SIDE + " consumers", batch,
                        () -> raw(run, broker, batch, messages, SIDE_BY_SIDE)));
                group.add(new BenchmarkRun.Cell(PGBENCH_SCRIPT + ", " + SIDE_BY_SIDE + " connections", batch,
                        () -> pgbenchPerMessage(run, SIDE_BY_SIDE)));
                group.add(new BenchmarkRun.Cell(NO_BROKER_CELL, batch, () -> consumeAllWithoutBroker(run, batch, messages)));
            }
            List<Measurement> cells = run.interleaved(group);
            Measurement raw = cells.get(2);
            rows.add(exactlyOnceRow(broker.label() + ": " + messages + " messages exactly once into payments, a handler "
                    + "call per message", batch, cells.get(0), raw, cells.get(3)));
            rows.add(exactlyOnceRow(broker.label() + ": " + messages + " messages exactly once into payments, one handler "
                    + "call per batch (consumeAll, a JDBC batch)", batch, cells.get(1), raw, cells.get(4)));
            rows.add(ResultRow.of(TITLE, broker.label() + ": " + messages + " messages, raw consume and ack",
                    batch, raw));
            rows.add(ResultRow.of(TITLE, "the same " + messages + " payment inserts, a transaction per "
                    + "batch, no broker, no consumer", batch, cells.get(3)));
            rows.add(ResultRow.of(TITLE, "the same " + messages + " payment inserts as one JDBC batch, a transaction per "
                    + "batch, no broker, no consumer", batch, cells.get(4)));
            if (batch == TARGET_BATCH) {
                Measurement pgbench = cells.get(5);
                rows.add(ResultRow.of(TITLE, "pgbench " + PGBENCH_SCRIPT + ": consumeAll's statements for a batch of new "
                        + "messages, no broker", batch, pgbench).compared(broker.label() + " consumeAll/pgbench msg/s "
                        + Targets.format(Targets.ratio(cells.get(1).opsPerSecond(), pgbench.opsPerSecond()))));
                Measurement withoutBroker = cells.get(9);
                rows.add(ResultRow.of(TITLE, "the same " + messages + " messages made in the JVM, exactly once into payments, "
                        + "one handler call per batch (consumeAll, a JDBC batch), no broker", batch, withoutBroker)
                        .compared("no broker/pgbench msg/s " + Targets.format(Targets.ratio(withoutBroker.opsPerSecond(),
                                pgbench.opsPerSecond())) + ", " + broker.label() + " consumeAll/no broker msg/s "
                                + Targets.format(Targets.ratio(cells.get(1).opsPerSecond(), withoutBroker.opsPerSecond()))));
                Measurement sideBySide = cells.get(6);
                Measurement sideBySidePgbench = cells.get(8);
                rows.add(exactlyOnceRow(broker.label() + ": " + messages + " messages exactly once into payments, one "
                        + "handler call per batch (consumeAll, a JDBC batch), " + SIDE_BY_SIDE + " consumers side by side, "
                        + "each on a destination of its own", batch, sideBySide, cells.get(7), cells.get(4))
                        .compared("ours/pgbench on " + SIDE_BY_SIDE + " connections "
                                + Targets.format(Targets.ratio(sideBySide.opsPerSecond(), sideBySidePgbench.opsPerSecond()))));
                rows.add(ResultRow.of(TITLE, broker.label() + ": " + messages + " messages, raw consume and ack, "
                        + SIDE_BY_SIDE + " consumers side by side", batch, cells.get(7)));
                rows.add(ResultRow.of(TITLE, "pgbench " + PGBENCH_SCRIPT + " on " + SIDE_BY_SIDE + " connections, no broker",
                        batch, sideBySidePgbench));
            }
        }
        return rows;
    }

    /** A row of an exactly-once cell, compared with raw and with the bare inserts written the same way. */
    private static ResultRow exactlyOnceRow(String measured, int batch, Measurement ours, Measurement raw, Measurement bare) {
        double ratio = Targets.ratio(ours.opsPerSecond(), raw.opsPerSecond());
        String target = batch != TARGET_BATCH ? "reported" : Targets.verdict(ours.opsPerSecond() >= FLOOR
                && ratio >= RATIO_FLOOR, String.format(Locale.ROOT, ">= %.0f msg/s and >= %.1f of raw", FLOOR, RATIO_FLOOR));
        return ResultRow.of(TITLE, measured, batch, ours).compared("ours/raw msg/s " + Targets.format(ratio)
                + ", ours/bare inserts " + Targets.format(Targets.ratio(ours.opsPerSecond(), bare.opsPerSecond())))
                .target(target);
    }

    /**
     * {@code together}: the handler is {@link IdempotentBatchConsumer#consumeAll}'s, one call for the batch
     * writing its payments in one JDBC batch; else {@code consume}'s, one insert statement per message.
     */
    private static Measurement exactlyOnce(BenchmarkRun run, ConsumerBroker broker, int batch, int messages,
                                           boolean together, int consumers) throws Exception {
        try (HikariDataSource pool = run.database().pool("consumers", consumers)) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool).config(run.executorConfig()).build();
            IdempotentBatchConsumer consumer = IdempotentBatchConsumer.builder(executor, "bench-consumer").build();
            String insert = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, run.database().schema());
            AtomicReference<String> firstError = new AtomicReference<>();
            AtomicLong consumed = new AtomicLong();
            Measurement m = measure(run, broker, together ? "exactly once, a call per batch" : "exactly once", batch, messages,
                    consumers, (source, received) -> {
                List<IdempotentBatchConsumer.Result<ConsumerBroker.Received>> results = together
                        ? consumer.consumeAll(received, ConsumerBroker.Received::messageId, ConsumerBroker.Received::tenant,
                                (tx, fresh) -> insertAll(tx.handle(), insert, fresh))
                        : consumer.consume(received, ConsumerBroker.Received::messageId, ConsumerBroker.Received::tenant,
                                (tx, message) -> tx.handle().createUpdate(insert).bind("tenant", message.tenant())
                                        .bind("amount", message.amount()).execute());
                // Committed: now the acks.
                long errors = notApplied(results, firstError);
                source.acknowledge(received);
                consumed.addAndGet(received.size());
                return errors;
            });
            long payments = payments(run, pool);
            if (payments != consumed.get()) {
                // Exactly once means one payment per message consumed, warm-up included.
                return m.withErrors(m.errors() + Math.abs(payments - consumed.get()),
                        "payments " + payments + " for " + consumed.get() + " messages");
            }
            return firstError.get() == null ? m : m.withErrors(m.errors(), firstError.get());
        }
    }

    /** The payments of {@code messages} in one JDBC batch: one round trip, as a {@code consumeAll} handler writes them. */
    private static void insertAll(Handle handle, String insert, List<ConsumerBroker.Received> messages) {
        PreparedBatch payments = handle.prepareBatch(insert);
        for (ConsumerBroker.Received message : messages) {
            payments.bind("tenant", message.tenant()).bind("amount", message.amount()).add();
        }
        payments.execute();
    }

    /**
     * The business inserts alone: a Jdbi transaction per batch (as the consumer's handlers write them: a
     * statement each, or with {@code together} one JDBC batch), no broker.
     */
    private static Measurement bareInserts(BenchmarkRun run, int batch, int messages, boolean together) {
        try (HikariDataSource pool = run.database().pool("consumers-bare", 1)) {
            Jdbi jdbi = PaymentCalls.jdbi(pool); // with the PostgreSQL plugin, as the executor's
            String insert = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, run.database().schema());
            return batchLoop(run, together ? BARE_BATCHED_INSERTS_CELL : BARE_INSERTS_CELL, batch, messages, () -> {
                insertBatch(jdbi, insert, batch, together);
                return 0;
            });
        }
    }

    /** One batch of a cell without a broker; returns its errors. */
    @FunctionalInterface
    private interface BatchCall {
        long run();
    }

    /**
     * A cell without a broker: {@code call} in a loop on one thread, for the cell's warm-up, then until
     * {@code messages} messages in batches of {@code batch}, each batch's latency recorded.
     */
    private static Measurement batchLoop(BenchmarkRun run, String cell, int batch, int messages, BatchCall call) {
        Warmup warmup = run.warmup(cell);
        long warmEnd = System.nanoTime() + warmup.least().toNanos();
        while (System.nanoTime() < warmEnd) {
            call.run();
        }
        Histogram latencies = Measurement.newLatencyHistogram();
        ClientWindow client = ClientWindow.start();
        long started = System.nanoTime();
        long done = 0;
        long errors = 0;
        while (done < messages) {
            long batchStart = System.nanoTime();
            errors += call.run();
            latencies.recordValue(Math.max(1_000, System.nanoTime() - batchStart));
            done += batch;
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        return new Measurement(done, done / seconds, latencies.getValueAtPercentile(50) / 1e6,
                latencies.getValueAtPercentile(99) / 1e6, client.perOperation(done), errors,
                errors == 0 ? null : errors + " error(s)");
    }

    private static void insertBatch(Jdbi jdbi, String insert, int batch, boolean together) {
        jdbi.useTransaction(h -> {
            if (together) {
                PreparedBatch payments = h.prepareBatch(insert);
                for (int m = 0; m < batch; m++) {
                    payments.bind("tenant", ConsumerBroker.TENANT).bind("amount", 100 + m).add();
                }
                payments.execute();
                return;
            }
            for (int m = 0; m < batch; m++) {
                h.createUpdate(insert).bind("tenant", ConsumerBroker.TENANT).bind("amount", 100 + m).execute();
            }
        });
    }

    /**
     * {@code consumeAll} as {@link #exactlyOnce} runs it, on batches of new messages made in this JVM instead
     * of fetched from a broker, and nothing acknowledged: what the consumer and PostgreSQL make alone.
     */
    private static Measurement consumeAllWithoutBroker(BenchmarkRun run, int batch, int messages) {
        try (HikariDataSource pool = run.database().pool("consumers-no-broker", 1)) {
            PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(pool).config(run.executorConfig()).build();
            IdempotentBatchConsumer consumer = IdempotentBatchConsumer.builder(executor, "bench-no-broker").build();
            String insert = BenchmarkSql.render(BenchmarkSql.INSERT_PAYMENT, run.database().schema());
            String prefix = UUID.randomUUID().toString();
            AtomicLong made = new AtomicLong();
            AtomicReference<String> firstError = new AtomicReference<>();
            Measurement m = batchLoop(run, NO_BROKER_CELL, batch, messages,
                    () -> consumeNewBatch(consumer, insert, prefix, made, batch, firstError));
            // As in exactlyOnce: one payment per message consumed, warm-up included.
            long payments = payments(run, pool);
            if (payments != made.get()) {
                return m.withErrors(m.errors() + Math.abs(payments - made.get()),
                        "payments " + payments + " for " + made.get() + " messages");
            }
            return firstError.get() == null ? m : m.withErrors(m.errors(), firstError.get());
        }
    }

    /** One batch of {@code batch} new messages through {@code consumeAll}; returns how many were not applied. */
    private static long consumeNewBatch(IdempotentBatchConsumer consumer, String insert, String prefix, AtomicLong made,
                                        int batch, AtomicReference<String> firstError) {
        List<ConsumerBroker.Received> received = new ArrayList<>(batch);
        for (int m = 0; m < batch; m++) {
            received.add(new ConsumerBroker.Received(null, prefix + "-" + made.incrementAndGet(), ConsumerBroker.TENANT, 100 + m));
        }
        return notApplied(consumer.consumeAll(received, ConsumerBroker.Received::messageId, ConsumerBroker.Received::tenant,
                (tx, fresh) -> insertAll(tx.handle(), insert, fresh)), firstError);
    }

    /**
     * How many of a batch's results are not APPLIED, each an error since every message is new; the
     * first one's outcome and error into {@code firstError}.
     */
    private static long notApplied(List<IdempotentBatchConsumer.Result<ConsumerBroker.Received>> results,
                                   AtomicReference<String> firstError) {
        long errors = 0;
        for (IdempotentBatchConsumer.Result<ConsumerBroker.Received> result : results) {
            if (result.delivery().outcome() != dev.idempotency.core.consumer.Delivery.Outcome.APPLIED) {
                errors++;
                firstError.compareAndSet(null, result.delivery().outcome() + ": " + result.delivery().error());
            }
        }
        return errors;
    }

    /** The payments the cell's schema holds. */
    private static long payments(BenchmarkRun run, HikariDataSource pool) {
        return Jdbi.create(pool).withHandle(h -> h.createQuery(
                BenchmarkSql.render(BenchmarkSql.COUNT_PAYMENTS, run.database().schema())).mapTo(Long.class).one());
    }

    /** pgbench running {@link #PGBENCH_SCRIPT} on {@code connections}, its transactions counted as the messages they hold. */
    private static Measurement pgbenchPerMessage(BenchmarkRun run, int connections) throws Exception {
        Measurement batches = PaymentCalls.pgbenchCell(run, PGBENCH_SCRIPT, connections).body().measure();
        ClientCost client = batches.client();
        return new Measurement(batches.operations() * TARGET_BATCH, batches.opsPerSecond() * TARGET_BATCH,
                batches.p50Millis(), batches.p99Millis(), new ClientCost(client.cpuMicros() / TARGET_BATCH,
                client.userMicros() / TARGET_BATCH, client.switches() / TARGET_BATCH), batches.errors(), batches.firstError());
    }

    private static Measurement raw(BenchmarkRun run, ConsumerBroker broker, int batch, int messages, int consumers)
            throws Exception {
        return measure(run, broker, "raw", batch, messages, consumers, (source, received) -> {
            source.acknowledge(received);
            return 0;
        });
    }

    /** One batch's work on a source: process, then acknowledge; returns its errors. */
    @FunctionalInterface
    private interface Work {
        long apply(ConsumerBroker.Batches source, List<ConsumerBroker.Received> batch) throws Exception;
    }

    /**
     * Fills a destination of its own for each of {@code consumers} consumers with its share of the
     * cell's messages and, when the cell warms up, as many again; each consumer consumes its warm-up
     * (untimed), waits for the others, then consumes its share timed, on a thread of its own. Timed
     * from the first batch any of them fetched to the last acknowledgement's arrival.
     */
    private static Measurement measure(BenchmarkRun run, ConsumerBroker broker, String mode, int batch, int messages,
                                       int consumers, Work work) throws Exception {
        Warmup warmup = run.warmup("consumers " + broker.label() + " " + mode + (consumers > 1 ? ", " + consumers + " consumers" : ""));
        int share = messages / consumers;
        int extra = warmup.least().isZero() ? 0 : share;
        List<ConsumerBroker.Batches> sources = new ArrayList<>(consumers);
        ExecutorService threads = Executors.newFixedThreadPool(consumers);
        try {
            for (int c = 0; c < consumers; c++) {
                sources.add(broker.fill(share + extra, batch));
            }
            Window window = new Window();
            CyclicBarrier warmedUp = new CyclicBarrier(consumers);
            List<Future<Consumed>> running = new ArrayList<>(consumers);
            for (ConsumerBroker.Batches source : sources) {
                running.add(threads.submit(() -> consume(broker, source, warmup, batch, share, extra, warmedUp, window, work)));
            }
            Histogram latencies = Measurement.newLatencyHistogram();
            long errors = 0;
            long seen = 0;
            long ended = 0;
            for (Future<Consumed> consumer : running) {
                Consumed consumed = consumer.get();
                latencies.add(consumed.latencies());
                errors += consumed.errors();
                seen += consumed.seen();
                ended = Math.max(ended, consumed.ended());
            }
            double seconds = (ended - window.started) / 1e9;
            return new Measurement(seen, seen / seconds, latencies.getValueAtPercentile(50) / 1e6,
                    latencies.getValueAtPercentile(99) / 1e6, window.client.perOperation(seen), errors, null);
        } finally {
            threads.shutdownNow();
            closeAll(sources);
        }
    }

    /** Closes every source, each even when one before it failed to close; throws the first failure. */
    private static void closeAll(List<ConsumerBroker.Batches> sources) throws Exception {
        Exception first = null;
        for (ConsumerBroker.Batches source : sources) {
            try {
                source.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** When the first consumer fetched its first timed batch, and the client's CPU from then. */
    private static final class Window {
        long started;
        ClientWindow client;

        synchronized void open() {
            if (client == null) {
                started = System.nanoTime();
                client = ClientWindow.start();
            }
        }
    }

    /** What one consumer consumed timed, and when its last acknowledgement arrived. */
    private record Consumed(Histogram latencies, long errors, long seen, long ended) {
    }

    /** One consumer: its warm-up, then, once every consumer is warm, its {@code share} timed. */
    private static Consumed consume(ConsumerBroker broker, ConsumerBroker.Batches source, Warmup warmup, int batch, int share,
                                    int extra, CyclicBarrier warmedUp, Window window, Work work) throws Exception {
        long warmEnd = System.nanoTime() + warmup.least().toNanos();
        int warmed = 0;
        while (warmed + batch <= extra && System.nanoTime() < warmEnd) {
            List<ConsumerBroker.Received> received = source.next();
            if (!received.isEmpty()) {
                work.apply(source, received);
                warmed += received.size();
            }
        }
        warmedUp.await(STALL.toSeconds(), TimeUnit.SECONDS);
        Histogram latencies = Measurement.newLatencyHistogram();
        long errors = 0;
        long seen = 0;
        long lastReceived = System.nanoTime();
        while (seen < share) {
            List<ConsumerBroker.Received> received = source.next();
            long fetched = System.nanoTime();
            if (received.isEmpty()) {
                // A consumer's first fetch can take a while (Kafka's metadata and offsets); only a long silence fails.
                if (fetched - lastReceived > STALL.toNanos()) {
                    throw new IllegalStateException(broker.label() + " handed out no message for " + STALL.toSeconds()
                            + " s after " + seen + " of " + share);
                }
                continue;
            }
            lastReceived = fetched;
            if (seen == 0) {
                window.open();
            }
            errors += work.apply(source, received);
            latencies.recordValue(Math.max(1_000, System.nanoTime() - fetched));
            seen += received.size();
        }
        source.awaitAcknowledgements();
        return new Consumed(latencies, errors, seen, System.nanoTime());
    }
}
