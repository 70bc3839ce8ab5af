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

    static EmbeddedDatabase start() {
        try {
            return new EmbeddedDatabase(EmbeddedPostgres.builder().start());
        } catch (IOException e) {
            throw new UncheckedIOException("could not start an embedded PostgreSQL: " + e.getMessage(), e);
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
}
