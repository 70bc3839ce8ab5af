package dev.idempotency.benchmarks.sections;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisher;
import dev.idempotency.outbox.publisher.nats.NatsJetStreamPublisherConfig;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Section 14's JetStream: a memory stream of the cell's own ({@link JetStreamStream}); the client alone
 * publishes every message with {@code publishAsync} and then awaits every {@link PublishAck}, the
 * fastest way jnats offers to publish with acknowledgements.
 */
final class JetStreamPath implements BrokerPath {
    /** Longest the raw publish may wait for its last ack, generous for any machine. */
    private static final Duration ACK_WAIT = Duration.ofMinutes(5);

    private final String natsUrl;

    JetStreamPath(String natsUrl) {
        this.natsUrl = natsUrl;
    }

    @Override
    public String name() {
        return "JetStream";
    }

    @Override
    public String rawWay() {
        return "jnats publishAsync, then every ack awaited";
    }

    @Override
    public Destination open() throws Exception {
        JetStreamStream stream = JetStreamStream.create(natsUrl);
        return new Destination() {
            @Override
            public Publisher relayPublisher() {
                return new NatsJetStreamPublisher(NatsJetStreamPublisherConfig.builder().servers(List.of(natsUrl))
                        .subjectPrefix(stream.subjectPrefix()).connectionName("relaybench").build());
            }

            @Override
            public double publishRaw(List<OutboxEvent> events) throws Exception {
                Connection connection = Nats.connect(new Options.Builder().server(natsUrl).connectionName("relaybench-raw")
                        .connectionTimeout(Duration.ofSeconds(5)).build());
                try {
                    JetStream jetStream = connection.jetStream();
                    long started = System.nanoTime();
                    List<CompletableFuture<PublishAck>> acks = new ArrayList<>(events.size());
                    for (OutboxEvent event : events) {
                        acks.add(jetStream.publishAsync(NatsMessage.builder()
                                .subject(stream.subjectPrefix() + event.topic())
                                .headers(headers(event))
                                .data(event.payloadJson().getBytes(StandardCharsets.UTF_8))
                                .build()));
                    }
                    CompletableFuture.allOf(acks.toArray(CompletableFuture[]::new)).get(ACK_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    return (System.nanoTime() - started) / 1e9;
                } finally {
                    connection.close();
                }
            }

            @Override
            public long held() throws Exception {
                return stream.messages();
            }

            @Override
            public void close() throws Exception {
                stream.close();
            }
        };
    }

    /** The headers NatsJetStreamPublisher sends for an event without headers or trace context of its own. */
    private static Headers headers(OutboxEvent event) {
        return new Headers()
                .put(NatsJetStreamPublisher.MESSAGE_ID_HEADER, event.messageId())
                .put(OutboxHeaders.TENANT, OutboxHeaders.encodeAsciiValue(event.tenant()))
                .put(OutboxHeaders.TOPIC, OutboxHeaders.encodeAsciiValue(event.topic()))
                .put(OutboxHeaders.PARTITION_KEY, OutboxHeaders.encodeAsciiValue(event.partitionKey()));
    }

    @Override
    public void close() {
    }
}
