package dev.idempotency.faults;

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
 * A TCP forwarder from a local port to a broker that a test can cut (every connection closed,
 * nothing listening: the broker went away) and restore on the same port (it came back), without
 * touching the shared broker itself.
 */
final class CuttableProxy implements AutoCloseable {
    private final int targetPort;
    private final ExecutorService threads = Executors.newCachedThreadPool(task -> {
        Thread thread = new Thread(task, "cuttable-proxy");
        thread.setDaemon(true);
        return thread;
    });
    private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
    private ServerSocket listener;
    private int port;

    CuttableProxy(int targetPort) {
        this.targetPort = targetPort;
        listen();
    }

    int port() {
        return port;
    }

    /** Closes every connection and stops listening. */
    synchronized void cut() {
        close(listener);
        listener = null;
        sockets.forEach(CuttableProxy::close);
        sockets.clear();
    }

    /** Listens again on the same port. */
    synchronized void restore() {
        if (listener == null) {
            listen();
        }
    }

    @Override
    public void close() {
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
                Socket target = new Socket(InetAddress.getLoopbackAddress(), targetPort);
                sockets.add(client);
                sockets.add(target);
                threads.execute(() -> pump(client, target));
                threads.execute(() -> pump(target, client));
            } catch (IOException e) {
                return;
            }
        }
    }

    private static void pump(Socket from, Socket to) {
        byte[] buffer = new byte[16 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            for (int read = in.read(buffer); read >= 0; read = in.read(buffer)) {
                out.write(buffer, 0, read);
                out.flush();
            }
        } catch (IOException e) {
            // Cut, or the other side closed.
        } finally {
            close(from);
            close(to);
        }
    }

    private static void close(AutoCloseable closeable) {
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
