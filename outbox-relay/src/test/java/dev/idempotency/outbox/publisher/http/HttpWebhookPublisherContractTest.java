package dev.idempotency.outbox.publisher.http;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.OutboxHeaders;
import dev.idempotency.outbox.publisher.PublisherContract;
import dev.idempotency.testing.Await;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;

/** The publisher contract against a real HTTP server in this JVM. */
class HttpWebhookPublisherContractTest extends PublisherContract {
    private final WebhookReceiver receiver = new WebhookReceiver();

    @AfterEach
    void stopReceiver() {
        receiver.close();
    }

    @Override
    protected String topic() {
        return "orders";
    }

    @Override
    protected Publisher reachablePublisher() {
        return new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder().baseUrl(receiver.url("/hooks")).build());
    }

    @Override
    protected Publisher unreachablePublisher(int closedPort) {
        return new HttpWebhookPublisher(HttpWebhookPublisherConfig.builder()
                .baseUrl("http://127.0.0.1:" + closedPort + "/hooks")
                .connectTimeout(Duration.ofSeconds(2)).build());
    }

    @Override
    protected List<Arrived> arrived(int count) throws Exception {
        Await.until(count + " requests received", Duration.ofSeconds(20), () -> receiver.received().size() >= count);
        return receiver.received().stream()
                .map(request -> new Arrived(request.header(HttpWebhookPublisher.IDEMPOTENCY_KEY),
                        OutboxHeaders.decodeAsciiValue(request.header(OutboxHeaders.TENANT)),
                        OutboxHeaders.decodeAsciiValue(request.header(OutboxHeaders.TOPIC)),
                        OutboxHeaders.decodeAsciiValue(request.header(OutboxHeaders.PARTITION_KEY)),
                        trace(name -> request.headers().containsKey(name) ? String.join(",", request.headers().get(name)) : null)))
                .toList();
    }
}
