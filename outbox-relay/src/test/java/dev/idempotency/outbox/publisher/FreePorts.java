package dev.idempotency.outbox.publisher;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Ports on 127.0.0.1 that nothing listens on, to play a broker that is down. */
public final class FreePorts {
    private FreePorts() {
    }

    /** A port that was free a moment ago; a connection to it is refused. */
    public static int closedPort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
