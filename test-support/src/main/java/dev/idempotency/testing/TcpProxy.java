package dev.idempotency.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * A TCP forwarder on 127.0.0.1 to a real broker or server, which a test can cut (it goes away),
 * restore (it comes back) or freeze (it stops reading what clients send).
 *
 * <p>The proxy keeps its listening port bound from {@link #to(int)} until {@link #close()}, even
 * while cut: a released port could be taken by another test's proxy, and a client reconnecting
 * "through the cut" would then reach a live broker. While cut, every connection is accepted and
 * closed at once, so clients see the broker go away.
 */
public final class TcpProxy implements AutoCloseable {
    private final int targetPort;
    private final ServerSocket listener;
    private final ExecutorService threads = Executors.newCachedThreadPool(task -> {
        Thread thread = new Thread(task, "tcp-proxy");
        thread.setDaemon(true);
        return thread;
    });
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private volatile boolean frozen;
    // Guarded by this: a connection is registered only while not cut, and cut() closes every registered one.
    private boolean cut;

    private TcpProxy(int targetPort, ServerSocket listener) {
        this.targetPort = targetPort;
        this.listener = listener;
    }

    /** Starts forwarding a new port to {@code targetPort}. */
    public static TcpProxy to(int targetPort) {
        ServerSocket opened;
        try {
            opened = new ServerSocket();
            opened.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        TcpProxy proxy = new TcpProxy(targetPort, opened);
        proxy.threads.execute(proxy::accept);
        return proxy;
    }

    /** The port clients connect to; it stays bound (and the same) across {@link #cut()} and {@link #restore()}. */
    public int port() {
        return listener.getLocalPort();
    }

    /** Closes every connection, and every new one at once, until {@link #restore()}: clients see the broker go away. */
    public synchronized void cut() {
        cut = true;
        sockets.forEach(TcpProxy::closeQuietly);
        sockets.clear();
    }

    /** Forwards new connections again; does nothing if it was not cut. */
    public synchronized void restore() {
        cut = false;
    }

    /** Stops reading from clients: their writes fill the socket buffers and then block. */
    public void freeze() {
        frozen = true;
    }

    /** Reads from clients again. */
    public void thaw() {
        frozen = false;
    }

    @Override
    public void close() {
        frozen = false;
        closeQuietly(listener);
        cut();
        threads.shutdownNow();
    }

    private void accept() {
        while (!listener.isClosed()) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                return;
            }
            Socket broker = null;
            try {
                if (!isCut()) {
                    broker = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                }
            } catch (IOException e) {
                // The target itself is down: the client sees its connection closed.
            }
            if (!register(client, broker)) {
                closeQuietly(client);
                closeQuietly(broker);
            }
        }
    }

    /** Starts forwarding unless the proxy is cut (or was cut while the broker side was connecting). */
    private synchronized boolean register(Socket client, Socket broker) {
        if (cut || broker == null || listener.isClosed()) {
            return false;
        }
        sockets.add(client);
        sockets.add(broker);
        threads.execute(() -> pump(client, broker, true));
        threads.execute(() -> pump(broker, client, false));
        return true;
    }

    private synchronized boolean isCut() {
        return cut;
    }

    private void pump(Socket from, Socket to, boolean fromClient) {
        byte[] buffer = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            while (true) {
                int read = in.read(buffer);
                if (read < 0) {
                    break;
                }
                // Frozen: hold what was read and read no more, as a broker that stopped reading would.
                while (fromClient && frozen && !from.isClosed()) {
                    Thread.sleep(10);
                }
                out.write(buffer, 0, read);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            // The other side or the test closed the connection.
        } finally {
            closeQuietly(from);
            closeQuietly(to);
            sockets.remove(from);
            sockets.remove(to);
        }
    }

    private static void closeQuietly(AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception e) {
            // Already closed.
        }
    }
}
