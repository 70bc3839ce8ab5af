package dev.idempotency.outbox.publisher.nats;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import dev.idempotency.outbox.publisher.PublisherContract;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.Brokers;
import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.api.MessageInfo;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/** The publisher contract against the NATS JetStream at 127.0.0.1:4222, on a stream of its own. */
class NatsJetStreamPublisherContractTest extends PublisherContract {
    private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    private final String stream = "OUTBOX_CONTRACT_" + suffix;
    private final String prefix = "outboxcontract." + suffix + ".";
    private Connection connection;
    private JetStreamManagement management;

    @BeforeAll
    static void brokerIsRunning() {
        Brokers.requireNats();
    }

    @BeforeEach
    void createStream() throws Exception {
        connection = Nats.connect("nats://127.0.0.1:" + Brokers.NATS_PORT);
        management = connection.jetStreamManagement();
        management.addStream(StreamConfiguration.builder().name(stream).subjects(prefix + ">")
                .storageType(StorageType.Memory).build());
    }

    @AfterEach
    void deleteStream() throws Exception {
        management.deleteStream(stream);
        connection.close();
    }

    @Override
    protected String topic() {
        return "orders";
    }

    @Override
    protected Publisher reachablePublisher() {
        return new NatsJetStreamPublisher(NatsJetStreamPublisherConfig.builder()
                .servers(List.of("nats://127.0.0.1:" + Brokers.NATS_PORT))
                .subjectPrefix(prefix).build());
    }

    @Override
    protected Publisher unreachablePublisher(int closedPort) {
        return new NatsJetStreamPublisher(NatsJetStreamPublisherConfig.builder()
                .servers(List.of("nats://127.0.0.1:" + closedPort))
                .subjectPrefix(prefix).connectTimeout(Duration.ofSeconds(2)).build());
    }

    @Override
    protected List<Arrived> arrived(int count) throws Exception {
        Await.until(count + " messages in stream " + stream, Duration.ofSeconds(20),
                () -> management.getStreamInfo(stream).getStreamState().getMsgCount() >= count);
        List<Arrived> arrived = new ArrayList<>();
        long last = management.getStreamInfo(stream).getStreamState().getLastSequence();
        for (long sequence = 1; sequence <= last; sequence++) {
            MessageInfo message = management.getMessage(stream, sequence);
            Headers headers = message.getHeaders();
            arrived.add(new Arrived(headers.getFirst(NatsJetStreamPublisher.MESSAGE_ID_HEADER),
                    OutboxHeaders.decodeAsciiValue(headers.getFirst(OutboxHeaders.TENANT)),
                    OutboxHeaders.decodeAsciiValue(headers.getFirst(OutboxHeaders.TOPIC)),
                    OutboxHeaders.decodeAsciiValue(headers.getFirst(OutboxHeaders.PARTITION_KEY)),
                    trace(name -> headers.containsKey(name) ? String.join(",", headers.get(name)) : null)));
        }
        return arrived;
    }
}
