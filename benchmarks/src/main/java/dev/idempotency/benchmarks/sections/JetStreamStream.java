package dev.idempotency.benchmarks.sections;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.time.Duration;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A JetStream stream of the benchmark's own, {@code relaybench_<random>} over the subjects
 * {@code relaybench_<random>.>}, in memory storage (the relay is measured, not the server's disk) with a
 * one-second duplicate window (enough to absorb a relay's re-publish, small enough that tracking a
 * million message ids costs the server little); deleted at {@link #close()}.
 */
final class JetStreamStream implements AutoCloseable {
    static final Duration DUPLICATE_WINDOW = Duration.ofSeconds(1);
    private static final Logger log = LoggerFactory.getLogger(JetStreamStream.class);

    private final Connection connection;
    private final String name;

    private JetStreamStream(Connection connection, String name) {
        this.connection = connection;
        this.name = name;
    }

    /** Creates the stream on the server at {@code url}; fails with a message naming it when NATS does not answer. */
    static JetStreamStream create(String url) throws IOException, InterruptedException {
        String name = "relaybench_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
        Connection connection;
        try {
            connection = Nats.connect(new Options.Builder().server(url).connectionTimeout(Duration.ofSeconds(5)).build());
        } catch (IOException e) {
            throw new IllegalStateException("NATS at " + url + " does not answer (" + e.getMessage()
                    + "); start nats-server with -js, or leave out the relay section's JetStream rows", e);
        }
        try {
            connection.jetStreamManagement().addStream(StreamConfiguration.builder()
                    .name(name).subjects(name + ".>").storageType(StorageType.Memory)
                    .duplicateWindow(DUPLICATE_WINDOW).build());
        } catch (JetStreamApiException | IOException e) {
            connection.close();
            throw new IllegalStateException("could not create JetStream stream " + name + " at " + url + ": " + e.getMessage(), e);
        }
        return new JetStreamStream(connection, name);
    }

    /** The stream's name, for a consumer of it. */
    String name() {
        return name;
    }

    /** The subject prefix to configure the publisher with: the topic follows it. */
    String subjectPrefix() {
        return name + ".";
    }

    /** Messages the stream holds now. */
    long messages() throws IOException, JetStreamApiException {
        return connection.jetStreamManagement().getStreamInfo(name).getStreamState().getMsgCount();
    }

    @Override
    public void close() throws InterruptedException {
        try {
            JetStreamManagement management = connection.jetStreamManagement();
            management.deleteStream(name);
        } catch (IOException | JetStreamApiException e) {
            log.warn("could not delete JetStream stream {}; delete it by hand: {}", name, e.getMessage());
        } finally {
            connection.close();
        }
    }
}
