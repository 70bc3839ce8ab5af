package dev.idempotency.outbox.cli;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * A PostgreSQL server of the process's own, started from binaries shipped in the jar into a temporary
 * directory that {@link #close()} removes: what demo and run use where no URL is given and no server
 * answers at the local default, so that the first command works where only Java is.
 */
final class EmbeddedDatabase implements AutoCloseable {
    private final EmbeddedPostgres server;

    private EmbeddedDatabase(EmbeddedPostgres server) {
        this.server = server;
    }

    /** Starts one; {@link NotStarted} says why not (no binaries for this platform, no temporary directory, ...). */
    static EmbeddedDatabase start() {
        try {
            return new EmbeddedDatabase(EmbeddedPostgres.builder().start());
        } catch (IOException | RuntimeException e) {
            throw new NotStarted(e);
        }
    }

    /** The URL of its {@code postgres} database as the {@code postgres} user (trust authentication). */
    String url() {
        return server.getJdbcUrl("postgres", "postgres");
    }

    int port() {
        return server.getPort();
    }

    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The embedded server did not start; the message names the cause and the way around it. */
    static final class NotStarted extends RuntimeException {
        private static final long serialVersionUID = 1L;

        NotStarted(Exception cause) {
            super("no --jdbc-url (IDEMPOTENCY_JDBC_URL), nothing answers at the local server, and an embedded PostgreSQL"
                    + " did not start (" + cause.getMessage() + "): pass --jdbc-url", cause);
        }
    }
}
