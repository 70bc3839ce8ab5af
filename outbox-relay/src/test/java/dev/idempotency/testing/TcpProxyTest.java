package dev.idempotency.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import java.io.InputStream;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The proxy the broker-outage tests rely on: a cut proxy keeps its port and refuses every connection. */
@Timeout(30)
class TcpProxyTest {

    @Test
    void aCutProxyKeepsItsPortSoNoOtherTestCanListenOnIt() throws Exception {
        try (EchoServer echo = new EchoServer(); TcpProxy proxy = TcpProxy.to(echo.port())) {
            proxy.cut();
            try (ServerSocket other = new ServerSocket()) {
                other.setReuseAddress(true);
                assertThrows(BindException.class,
                        () -> other.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), proxy.port())));
            }
        }
    }

    @Test
    void whileCutEveryConnectionIsClosedAtOnceAndAfterRestoreItIsForwarded() throws Exception {
        try (EchoServer echo = new EchoServer(); TcpProxy proxy = TcpProxy.to(echo.port())) {
            try (Socket before = connect(proxy)) {
                assertEquals('a', roundTrip(before, 'a'));
                proxy.cut();
                assertEquals(-1, readOrEnd(before.getInputStream()), "an open connection is closed by the cut");
            }
            for (int i = 0; i < 20; i++) {
                try (Socket during = connect(proxy)) {
                    assertEquals(-1, readOrEnd(during.getInputStream()), "a connection made while cut is closed");
                }
            }
            proxy.restore();
            try (Socket after = connect(proxy)) {
                assertEquals('b', roundTrip(after, 'b'));
            }
        }
    }

    private static Socket connect(TcpProxy proxy) throws IOException {
        Socket socket = new Socket(InetAddress.getLoopbackAddress(), proxy.port());
        socket.setSoTimeout(5_000);
        return socket;
    }

    private static int roundTrip(Socket socket, char c) throws IOException {
        socket.getOutputStream().write(c);
        socket.getOutputStream().flush();
        return socket.getInputStream().read();
    }

    /** End of stream or a reset both mean the peer closed the connection. */
    private static int readOrEnd(InputStream in) {
        try {
            return in.read();
        } catch (java.net.SocketTimeoutException e) {
            return -2;
        } catch (IOException e) {
            return -1;
        }
    }

    /** Echoes every byte back, one thread per connection. */
    private static final class EchoServer implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());

        EchoServer() throws IOException {
            Thread acceptor = new Thread(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket socket = server.accept();
                        Thread echo = new Thread(() -> echo(socket), "echo");
                        echo.setDaemon(true);
                        echo.start();
                    } catch (IOException e) {
                        return;
                    }
                }
            }, "echo-accept");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return server.getLocalPort();
        }

        private static void echo(Socket socket) {
            try (socket) {
                InputStream in = socket.getInputStream();
                for (int b = in.read(); b >= 0; b = in.read()) {
                    socket.getOutputStream().write(b);
                }
            } catch (IOException e) {
                // Closed.
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
        }
    }
}
