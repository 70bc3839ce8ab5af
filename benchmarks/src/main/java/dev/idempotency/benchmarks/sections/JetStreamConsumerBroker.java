package dev.idempotency.benchmarks.sections;

import dev.idempotency.outbox.publisher.OutboxHeaders;
import io.nats.client.ConsumeOptions;
import io.nats.client.Connection;
import io.nats.client.ConsumerContext;
import io.nats.client.IterableConsumer;
import io.nats.client.JetStream;
import io.nats.client.JetStreamStatusCheckedException;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * JetStream for the consumers section: a stream of the cell's own ({@link JetStreamStream}, memory
 * storage), filled by async publishes, read by a durable pull consumer through the client's
 * {@code iterate()}, which keeps pulls of up to two batches outstanding so that the next batch arrives
 * while this one is in the database, gathered into batches (the first message waited for up to a
 * second, the rest as they come), and acknowledged message by message ({@code ack()}, sent without
 * waiting), as the example does.
 */
final class JetStreamConsumerBroker implements ConsumerBroker {
    static final String MESSAGE_ID_HEADER = "Nats-Msg-Id";
    /** Async publishes in flight while filling. */
    private static final int FILL_WINDOW = 1_000;
    private static final Duration FIRST_WAIT = Duration.ofSeconds(1);
    /** How long a batch waits for each further message: the outstanding pull has them on the way. */
    private static final Duration NEXT_WAIT = Duration.ofMillis(200);

    private final String url;
    private final Connection connection;

    private JetStreamConsumerBroker(String url, Connection connection) {
        this.url = url;
        this.connection = connection;
    }

    /** Connects to NATS at {@code url}; fails with a message naming it when nothing answers. */
    static JetStreamConsumerBroker connect(String url) throws InterruptedException {
        try {
            return new JetStreamConsumerBroker(url, Nats.connect(new Options.Builder().server(url)
                    .connectionTimeout(Duration.ofSeconds(5)).build()));
        } catch (java.io.IOException e) {
            throw new IllegalStateException("NATS at " + url + " does not answer (" + e.getMessage()
                    + "); start nats-server with -js, or leave out the consumers section", e);
        }
    }

    @Override
    public String label() {
        return "JetStream pull";
    }

    @Override
    public Batches fill(int messages, int batch) throws Exception {
        JetStreamStream stream = JetStreamStream.create(url);
        try {
            String subject = stream.subjectPrefix() + "orders";
            JetStream jetStream = connection.jetStream();
            List<CompletableFuture<PublishAck>> pending = new ArrayList<>(FILL_WINDOW);
            for (int m = 0; m < messages; m++) {
                Headers headers = new Headers();
                headers.add(MESSAGE_ID_HEADER, UUID.randomUUID().toString());
                headers.add(OutboxHeaders.TENANT, TENANT);
                pending.add(jetStream.publishAsync(NatsMessage.builder().subject(subject).headers(headers)
                        .data(Long.toString(100 + m % 10_000).getBytes(StandardCharsets.UTF_8)).build()));
                if (pending.size() == FILL_WINDOW || m == messages - 1) {
                    for (CompletableFuture<PublishAck> ack : pending) {
                        ack.get(30, TimeUnit.SECONDS);
                    }
                    pending.clear();
                }
            }
            ConsumerContext consumer = connection.getStreamContext(stream.name()).createOrUpdateConsumer(
                    ConsumerConfiguration.builder().durable("consumers").filterSubject(subject).build());
            IterableConsumer pulled = consumer.iterate(ConsumeOptions.builder().batchSize(2 * batch).build());
            return new Batches() {
                @Override
                public List<Received> next() throws InterruptedException, JetStreamStatusCheckedException {
                    List<Received> received = new ArrayList<>(batch);
                    Message message = pulled.nextMessage(FIRST_WAIT);
                    while (message != null) {
                        received.add(new Received(message, message.getHeaders().getFirst(MESSAGE_ID_HEADER),
                                message.getHeaders().getFirst(OutboxHeaders.TENANT),
                                Long.parseLong(new String(message.getData(), StandardCharsets.UTF_8))));
                        message = received.size() == batch ? null : pulled.nextMessage(NEXT_WAIT);
                    }
                    return received;
                }

                @Override
                public void acknowledge(List<Received> acknowledged) {
                    for (Received received : acknowledged) {
                        ((Message) received.message()).ack();
                    }
                }

                @Override
                public void awaitAcknowledgements() throws Exception {
                    connection.flush(Duration.ofSeconds(30));
                }

                @Override
                public void close() throws Exception {
                    try {
                        pulled.close();
                    } finally {
                        stream.close();
                    }
                }
            };
        } catch (Exception | Error e) {
            stream.close();
            throw e;
        }
    }

    @Override
    public void close() throws InterruptedException {
        connection.close();
    }
}
