package dev.idempotency.outbox.publisher.log;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.outbox.publisher.PublisherContract;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.event.Level;

/**
 * The publisher contract for the log publisher: what "arrives" is its INFO line per event. It has no
 * broker to miss, and does not bound its calls (the relay's publishTimeout does).
 */
class LoggingPublisherContractTest extends PublisherContract {
    private static final Pattern INFO_LINE = Pattern.compile(
            "outbox event \\d+ messageId=(\\S+) tenant=(\\S+) topic=(\\S+) partitionKey=(.*) attempt=\\d+ payloadBytes=\\d+"
                    + "(?: traceparent=(\\S+))?");

    private final RecordingLogger logger = new RecordingLogger(Level.INFO);

    @Override
    protected String topic() {
        return "orders";
    }

    @Override
    protected Publisher reachablePublisher() {
        return new LoggingPublisher(logger);
    }

    @Override
    protected Publisher unreachablePublisher(int closedPort) {
        return null;
    }

    /** Its INFO line names the traceparent only. */
    @Override
    protected boolean sendsTracestate() {
        return false;
    }

    @Override
    protected boolean boundsItsCalls() {
        return false;
    }

    @Override
    protected List<Arrived> arrived(int count) {
        return logger.lines().stream()
                .map(line -> INFO_LINE.matcher(line.text()))
                .filter(Matcher::matches)
                .map(m -> new Arrived(m.group(1), m.group(2), m.group(3), m.group(4),
                        m.group(5) == null ? Map.of() : Map.of("traceparent", m.group(5))))
                .toList();
    }
}
