package dev.idempotency.outbox.cli;

import dev.idempotency.core.outbox.OutboxEvent;
import dev.idempotency.core.outbox.PublishResult;
import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.outbox.PublisherProvider;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A publisher of the tests' own, registered in this module's test resources as a user's jar would
 * register one: appends each event's message id, one a line, to the file its {@code file} setting names.
 */
public final class FileSinkPublisherProvider implements PublisherProvider {
    /** The name {@code --publisher} chooses it by. */
    static final String NAME = "test-file-sink";

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Publisher create(Map<String, String> settings) {
        if (!settings.keySet().equals(Set.of("file"))) {
            throw new IllegalArgumentException(NAME + " publisher takes one setting, file (was " + settings.keySet() + ")");
        }
        return new FileSink(Path.of(settings.get("file")));
    }

    private record FileSink(Path file) implements Publisher {
        @Override
        public List<PublishResult> publish(List<OutboxEvent> events) {
            StringBuilder lines = new StringBuilder();
            events.forEach(event -> lines.append(event.messageId()).append('\n'));
            try {
                Files.writeString(file, lines, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            } catch (IOException e) {
                return events.stream().map(event -> PublishResult.retry("cannot write " + file + ": " + e)).toList();
            }
            return events.stream().map(event -> PublishResult.published()).toList();
        }

        @Override
        public void close() {
        }
    }
}
