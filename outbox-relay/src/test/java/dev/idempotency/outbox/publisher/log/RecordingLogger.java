package dev.idempotency.outbox.publisher.log;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.slf4j.Marker;
import org.slf4j.event.Level;
import org.slf4j.helpers.LegacyAbstractLogger;
import org.slf4j.helpers.MessageFormatter;

/** An SLF4J logger that keeps what it is given, formatted, from a chosen level up. */
final class RecordingLogger extends LegacyAbstractLogger {
    private static final long serialVersionUID = 1L;

    /** One formatted log line. */
    record Line(Level level, String text) {
    }

    private final Level threshold;
    private final List<Line> lines = new CopyOnWriteArrayList<>();

    RecordingLogger(Level threshold) {
        this.threshold = threshold;
        this.name = "recording";
    }

    List<Line> lines() {
        return lines;
    }

    @Override
    protected void handleNormalizedLoggingCall(Level level, Marker marker, String pattern, Object[] arguments,
                                               Throwable throwable) {
        lines.add(new Line(level, MessageFormatter.basicArrayFormat(pattern, arguments)));
    }

    @Override
    protected String getFullyQualifiedCallerName() {
        return null;
    }

    @Override
    public boolean isTraceEnabled() {
        return enabled(Level.TRACE);
    }

    @Override
    public boolean isDebugEnabled() {
        return enabled(Level.DEBUG);
    }

    @Override
    public boolean isInfoEnabled() {
        return enabled(Level.INFO);
    }

    @Override
    public boolean isWarnEnabled() {
        return enabled(Level.WARN);
    }

    @Override
    public boolean isErrorEnabled() {
        return enabled(Level.ERROR);
    }

    // SLF4J numbers levels from ERROR (40) down to TRACE (0).
    private boolean enabled(Level level) {
        return level.toInt() >= threshold.toInt();
    }
}
