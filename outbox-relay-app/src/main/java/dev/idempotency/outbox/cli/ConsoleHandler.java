package dev.idempotency.outbox.cli;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves the operator console under {@code /console}: it checks the credentials (401 without them),
 * routes each path to its page, and lets POSTs through only with the CSRF token and, for actions,
 * outside read-only mode (403 otherwise). Every answer forbids caching, framing and anything loaded
 * from elsewhere.
 */
final class ConsoleHandler implements HttpHandler {
    private static final Logger log = LoggerFactory.getLogger(ConsoleHandler.class);
    private static final Pattern ONE = Pattern.compile("/console/dead-letters/(\\d{1,18})(/payload|/requeue)?");
    private static final int MAX_FORM_BYTES = 8 * 1024;
    private static final String STYLESHEET = "/dev/idempotency/outbox/cli/console/console.css";

    private final ConsoleAccess access;
    private final boolean readOnly;
    private final ConsoleQueries queries;
    private final ConsoleActions actions;
    private final OutboxBacklog backlog;
    private final OutboxDeadLetters deadLetters;
    private final Supplier<Duration> stalledFor;
    private final Duration stallAfter;

    ConsoleHandler(ConsoleAccess access, boolean readOnly, ConsoleQueries queries, OutboxBacklog backlog,
                   OutboxDeadLetters deadLetters, Supplier<Duration> stalledFor, Duration stallAfter) {
        this.access = access;
        this.readOnly = readOnly;
        this.queries = queries;
        this.actions = new ConsoleActions(deadLetters, queries);
        this.backlog = backlog;
        this.deadLetters = deadLetters;
        this.stalledFor = stalledFor;
        this.stallAfter = stallAfter;
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
            route(exchange, user.get());
        } catch (RuntimeException e) {
            log.warn("console: {} {} failed", exchange.getRequestMethod(), exchange.getRequestURI().getPath(), e);
            text(exchange, 500, "the console could not answer: " + e.getClass().getSimpleName() + "; see the relay's log");
        } finally {
            exchange.close();
        }
    }

    private void route(HttpExchange exchange, String user) throws IOException {
        String path = exchange.getRequestURI().getPath();
        String method = exchange.getRequestMethod();
        boolean post = "POST".equals(method);
        if (!post && !"GET".equals(method)) {
            text(exchange, 405, "GET or POST only");
            return;
        }
        if (post) {
            Map<String, String> form = form(exchange);
            if (!access.csrfMatches(form.get("csrf"))) {
                log.info("console: {} sent a POST to {} without the console's CSRF token; refused", user, path);
                text(exchange, 403, "refused: the form's token is missing or stale; reload the page");
                return;
            }
            post(exchange, user, path, form);
            return;
        }
        Matcher one = ONE.matcher(path);
        if (path.equals("/console") || path.equals("/console/")) {
            html(exchange, 200, OverviewPage.render(overview(), readOnly));
        } else if (path.equals("/console/console.css")) {
            stylesheet(exchange);
        } else if (path.equals("/console/dead-letters")) {
            html(exchange, 200, DeadLettersPage.list(deadLetters.list(100), deadLetters.count(),
                    notice(exchange.getRequestURI().getRawQuery()), readOnly));
        } else if (path.equals("/console/dead-letters/requeue-all") && !readOnly) {
            html(exchange, 200, DeadLettersPage.confirmRequeueAll(deadLetters.count(), access.csrfToken()));
        } else if (one.matches() && one.group(2) == null) {
            showOne(exchange, Long.parseLong(one.group(1)), null);
        } else {
            text(exchange, 404, "no such page");
        }
    }

    private void post(HttpExchange exchange, String user, String path, Map<String, String> form) throws IOException {
        Matcher one = ONE.matcher(path);
        if (one.matches() && "/payload".equals(one.group(2))) {
            long id = Long.parseLong(one.group(1));
            Optional<String> payload = actions.revealPayload(user, id);
            if (payload.isEmpty()) {
                text(exchange, 404, "no dead letter " + id);
            } else {
                showOne(exchange, id, payload.get());
            }
            return;
        }
        boolean requeueOne = one.matches() && "/requeue".equals(one.group(2));
        boolean requeueAll = path.equals("/console/dead-letters/requeue-all");
        if (!requeueOne && !requeueAll) {
            text(exchange, 404, "no such action");
            return;
        }
        if (readOnly) {
            log.info("console: {} sent {} to a read-only console; refused", user, path);
            text(exchange, 403, "refused: this console is read-only");
            return;
        }
        if (requeueOne) {
            long id = Long.parseLong(one.group(1));
            boolean done = actions.requeue(user, id);
            redirect(exchange, "/console/dead-letters?" + (done ? "requeued=" : "gone=") + id);
        } else if (!"yes".equals(form.get("confirm"))) {
            text(exchange, 400, "requeueing all dead letters needs the confirmation page's confirm=yes");
        } else {
            List<Long> requeued = actions.requeueAll(user);
            redirect(exchange, "/console/dead-letters?requeuedAll=" + requeued.size());
        }
    }

    private void showOne(HttpExchange exchange, long id, String payload) throws IOException {
        Optional<ConsoleQueries.DeadLetterDetail> dead = queries.deadLetter(id);
        if (dead.isEmpty()) {
            text(exchange, 404, "no dead letter " + id + " (requeued or published already?)");
            return;
        }
        html(exchange, 200, DeadLetterPage.render(dead.get(), payload, access.csrfToken(), readOnly));
    }

    private OverviewPage.Overview overview() {
        return new OverviewPage.Overview(backlog.pendingCount(), backlog.oldestPendingAge(), stalledFor.get(), stallAfter,
                deadLetters.count(), queries.relays(), queries.partitions(), queries.generations());
    }

    /** The line a redirect's query asks the list to show; only numbers are taken from it. */
    private static String notice(String query) {
        if (query == null) {
            return null;
        }
        Matcher matcher = Pattern.compile("^(requeued|gone|requeuedAll)=(\\d{1,18})$").matcher(query);
        if (!matcher.matches()) {
            return null;
        }
        String number = matcher.group(2);
        return switch (matcher.group(1)) {
            case "requeued" -> "Requeued dead letter " + number + ": the relay publishes it again.";
            case "gone" -> "Dead letter " + number + " is no longer a dead letter (requeued or published already).";
            default -> "Requeued " + number + " dead letters.";
        };
    }

    private static Map<String, String> form(HttpExchange exchange) throws IOException {
        byte[] body;
        try (InputStream in = exchange.getRequestBody()) {
            body = in.readNBytes(MAX_FORM_BYTES + 1);
        }
        Map<String, String> fields = new HashMap<>();
        if (body.length > MAX_FORM_BYTES) {
            return fields;
        }
        for (String pair : new String(body, StandardCharsets.US_ASCII).split("&")) {
            int equals = pair.indexOf('=');
            if (equals > 0) {
                fields.putIfAbsent(URLDecoder.decode(pair.substring(0, equals), StandardCharsets.UTF_8),
                        URLDecoder.decode(pair.substring(equals + 1), StandardCharsets.UTF_8));
            }
        }
        return fields;
    }

    private static void stylesheet(HttpExchange exchange) throws IOException {
        try (InputStream css = ConsoleHandler.class.getResourceAsStream(STYLESHEET)) {
            if (css == null) {
                text(exchange, 404, "no stylesheet");
                return;
            }
            send(exchange, 200, "text/css; charset=utf-8", css.readAllBytes());
        }
    }

    private static void redirect(HttpExchange exchange, String location) throws IOException {
        exchange.getResponseHeaders().set("Location", location);
        send(exchange, 303, "text/plain; charset=utf-8", new byte[0]);
    }

    private static void html(HttpExchange exchange, int status, String page) throws IOException {
        send(exchange, status, "text/html; charset=utf-8", page.getBytes(StandardCharsets.UTF_8));
    }

    private static void text(HttpExchange exchange, int status, String message) throws IOException {
        send(exchange, status, "text/plain; charset=utf-8", (message + "\n").getBytes(StandardCharsets.UTF_8));
    }

    private static void send(HttpExchange exchange, int status, String contentType, byte[] body) throws IOException {
        var headers = exchange.getResponseHeaders();
        headers.set("Content-Type", contentType);
        headers.set("Cache-Control", "no-store");
        headers.set("X-Content-Type-Options", "nosniff");
        headers.set("X-Frame-Options", "DENY");
        headers.set("Referrer-Policy", "no-referrer");
        headers.set("Content-Security-Policy",
                "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
        exchange.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        if (body.length > 0) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }
}
