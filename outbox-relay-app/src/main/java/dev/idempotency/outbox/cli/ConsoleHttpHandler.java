package dev.idempotency.outbox.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.idempotency.console.OutboxConsole;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The console on the JDK's HTTP server under {@value #BASE_PATH}: the Host check and HTTP Basic of
 * {@link ConsoleAccess} first (421, 401), then the request handed to the {@link OutboxConsole} with its
 * query or form fields and the user, and its answer written back.
 */
final class ConsoleHttpHandler implements HttpHandler {
    /** Where the relay application serves the console. */
    static final String BASE_PATH = "/console";
    private static final int MAX_FORM_BYTES = 8 * 1024;

    private final ConsoleAccess access;
    private final OutboxConsole console;

    ConsoleHttpHandler(ConsoleAccess access, OutboxConsole console) {
        this.access = access;
        this.console = console;
    }

    @Override
    public void handle(HttpExchange exchange) throws IOException {
        try {
            if (!access.hostAllowed(exchange.getRequestHeaders().getFirst("Host"))) {
                text(exchange, 421, "the console without credentials answers only requests for localhost or 127.0.0.1");
                return;
            }
            Optional<String> user = access.userFor(exchange.getRequestHeaders().getFirst("Authorization"));
            if (user.isEmpty()) {
                exchange.getResponseHeaders().set("WWW-Authenticate", "Basic realm=\"outbox console\", charset=\"UTF-8\"");
                text(exchange, 401, "credentials required");
                return;
            }
            String method = exchange.getRequestMethod();
            Map<String, String> parameters = "POST".equals(method) ? form(exchange)
                    : fields(exchange.getRequestURI().getRawQuery());
            String path = exchange.getRequestURI().getPath().substring(BASE_PATH.length());
            send(exchange, console.handle(new OutboxConsole.Request(method, path, parameters, user.get(), null)));
        } finally {
            exchange.close();
        }
    }

    private static Map<String, String> form(HttpExchange exchange) throws IOException {
        byte[] body;
        try (InputStream in = exchange.getRequestBody()) {
            body = in.readNBytes(MAX_FORM_BYTES + 1);
        }
        return body.length > MAX_FORM_BYTES ? Map.of() : fields(new String(body, StandardCharsets.US_ASCII));
    }

    /** {@code a=1&b=2} decoded; the first of repeated names wins. */
    private static Map<String, String> fields(String encoded) {
        Map<String, String> fields = new HashMap<>();
        if (encoded == null) {
            return fields;
        }
        for (String pair : encoded.split("&")) {
            int equals = pair.indexOf('=');
            if (equals > 0) {
                fields.putIfAbsent(URLDecoder.decode(pair.substring(0, equals), StandardCharsets.UTF_8),
                        URLDecoder.decode(pair.substring(equals + 1), StandardCharsets.UTF_8));
            }
        }
        return fields;
    }

    private static void text(HttpExchange exchange, int status, String message) throws IOException {
        byte[] body = (message + "\n").getBytes(StandardCharsets.UTF_8);
        send(exchange, new OutboxConsole.Response(status, Map.of("Content-Type", "text/plain; charset=utf-8",
                "Cache-Control", "no-store"), body));
    }

    private static void send(HttpExchange exchange, OutboxConsole.Response response) throws IOException {
        response.headers().forEach(exchange.getResponseHeaders()::set);
        byte[] body = response.body();
        exchange.sendResponseHeaders(response.status(), body.length == 0 ? -1 : body.length);
        if (body.length > 0) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }
}
