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
 * restore on the same port (it comes back) or freeze (it stops reading what clients send).
 */
public final class TcpProxy implements AutoCloseable {
    private final int targetPort;
    private final ExecutorService threads = Executors.newCachedThreadPool(task -> {
        Thread thread = new Thread(task, "tcp-proxy");
        thread.setDaemon(true);
        return thread;
    });
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private volatile ServerSocket listener;
    private volatile boolean frozen;
    private int port;

    private TcpProxy(int targetPort) {
        this.targetPort = targetPort;
    }

    /** Starts forwarding a new port to {@code targetPort}. */
    public static TcpProxy to(int targetPort) {
        TcpProxy proxy = new TcpProxy(targetPort);
        proxy.listen();
        return proxy;
    }

    /** The port clients connect to; it stays the same across {@link #cut()} and {@link #restore()}. */
    public int port() {
        return port;
    }

    /** Closes every connection and stops listening: clients see the broker go away. */
    public synchronized void cut() {
        closeQuietly(listener);
        listener = null;
        sockets.forEach(TcpProxy::closeQuietly);
        sockets.clear();
    }

    /** Listens again on the same port; does nothing if it was not cut. */
    public synchronized void restore() {
        if (listener == null) {
            listen();
        }
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
        cut();
        threads.shutdownNow();
    }

    private synchronized void listen() {
        try {
            ServerSocket opened = new ServerSocket();
            opened.setReuseAddress(true);
            opened.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 50);
            port = opened.getLocalPort();
            listener = opened;
            threads.execute(() -> accept(opened));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void accept(ServerSocket opened) {
        while (!opened.isClosed()) {
            try {
                Socket client = opened.accept();
                Socket broker = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                sockets.add(client);
                sockets.add(broker);
                threads.execute(() -> pump(client, broker, true));
                threads.execute(() -> pump(broker, client, false));
            } catch (IOException e) {
                return;
            }
        }
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
