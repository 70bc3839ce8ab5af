package dev.idempotency.console;

import dev.idempotency.jdbc.UnknownOutcomes;
import dev.idempotency.outbox.OutboxBacklog;
import dev.idempotency.outbox.OutboxDeadLetters;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes each request below the console's base path to its page, and lets POSTs through only with the
 * console's CSRF token and, for actions, outside read-only mode (403 otherwise). Every answer forbids
 * caching, framing and anything loaded from elsewhere.
 */
final class ConsoleHandler {
    private static final Logger log = LoggerFactory.getLogger(ConsoleHandler.class);
    private static final Pattern ONE = Pattern.compile("/dead-letters/(\\d{1,18})(/payload|/requeue)?");
    private static final String STYLESHEET = "/dev/idempotency/console/console.css";
    private static final String CHARTS = "/dev/idempotency/console/console-charts.js";
    /** uPlot's files in its webjar; the version is outbox-console's pom's uplot.version. */
    private static final String UPLOT = "/META-INF/resources/webjars/uplot/1.6.30/dist/";
    private static final Pattern SELECTED = Pattern.compile(Pattern.quote(DeadLettersPage.SELECT) + "(\\d{1,18})");
    /** Rows a list page shows at most. */
    private static final int PAGE_ROWS = 100;
    /** The POSTs that change something, refused in read-only mode (reveals are not among them). */
    private static final List<String> ACTIONS = List.of("/dead-letters/requeue-all", "/dead-letters/selected", "/keys/resolve");

    private final String base;
    private final boolean readOnly;
    private final ConsoleCsrf csrf = new ConsoleCsrf();
    private final ConsoleQueries queries;
    private final ConsoleActions actions;
    private final OutboxBacklog backlog;
    private final OutboxDeadLetters deadLetters;
    private final UnknownOutcomes unknownOutcomes;
    private final Supplier<Duration> stalledFor;
    private final Duration stallAfter;

    ConsoleHandler(String base, boolean readOnly, ConsoleQueries queries, OutboxBacklog backlog,
                   OutboxDeadLetters deadLetters, UnknownOutcomes unknownOutcomes, Supplier<Duration> stalledFor,
                   Duration stallAfter) {
        this.base = base;
        this.readOnly = readOnly;
        this.queries = queries;
        this.actions = new ConsoleActions(deadLetters, unknownOutcomes, queries);
        this.backlog = backlog;
        this.deadLetters = deadLetters;
        this.unknownOutcomes = unknownOutcomes;
        this.stalledFor = stalledFor;
        this.stallAfter = stallAfter;
    }

    OutboxConsole.Response handle(OutboxConsole.Request request) {
        String user = request.user() == null ? "anonymous" : request.user();
        try {
            return route(request, user, view(request.hostCsrf()));
        } catch (ConsoleActions.Refused e) {
            return text(400, "refused: " + e.getMessage());
        } catch (RuntimeException e) {
            log.warn("console: {} {} failed", request.method(), request.path(), e);
            return text(500, "the console could not answer: " + e.getClass().getSimpleName() + "; see the application's log");
        }
    }

    private ConsoleView view(OutboxConsole.HostCsrf hostCsrf) {
        String fields = ConsoleHtml.hiddenField(ConsoleCsrf.FIELD, csrf.token())
                + (hostCsrf == null ? "" : ConsoleHtml.hiddenField(hostCsrf.parameterName(), hostCsrf.token()));
        return new ConsoleView(base, fields, readOnly);
    }

    private OutboxConsole.Response route(OutboxConsole.Request request, String user, ConsoleView view) {
        String path = request.path();
        String method = request.method();
        boolean post = "POST".equals(method);
        if (!post && !"GET".equals(method)) {
            return text(405, "GET or POST only");
        }
        if (post) {
            if (!csrf.matches(request.parameters().get(ConsoleCsrf.FIELD))) {
                log.info("console: {} sent a POST to {} without the console's CSRF token; refused", user, path);
                return text(403, "refused: the form's token is missing or stale; reload the page");
            }
            return post(request, user, view);
        }
        Matcher one = ONE.matcher(path);
        if (path.isEmpty() || path.equals("/")) {
            return html(200, OverviewPage.render(overview(), view));
        } else if (path.equals("/console.css")) {
            return resource(STYLESHEET, "text/css; charset=utf-8");
        } else if (path.equals("/overview/rates.json")) {
            return send(200, "application/json", OverviewPage.ratesJson(queries.rates()).getBytes(StandardCharsets.UTF_8),
                    Map.of());
        } else if (path.equals("/assets/console-charts.js")) {
            return resource(CHARTS, "text/javascript; charset=utf-8");
        } else if (path.equals("/assets/uplot.js")) {
            return resource(UPLOT + "uPlot.iife.min.js", "text/javascript; charset=utf-8");
        } else if (path.equals("/assets/uplot.css")) {
            return resource(UPLOT + "uPlot.min.css", "text/css; charset=utf-8");
        } else if (path.equals("/dead-letters")) {
            DeadLetterFilter filter = DeadLetterFilter.from(request.parameters()::get);
            return html(200, DeadLettersPage.list(queries.deadLetters(filter, PAGE_ROWS), queries.countDeadLetters(filter),
                    filter, notice(request.parameters()), view));
        } else if (path.equals("/dead-letters/requeue-all") && !readOnly) {
            DeadLetterFilter filter = DeadLetterFilter.from(request.parameters()::get);
            return html(200, DeadLettersPage.confirmRequeueAll(queries.countDeadLetters(filter), filter, view));
        } else if (one.matches() && one.group(2) == null) {
            return showOne(Long.parseLong(one.group(1)), null, view);
        } else if (path.equals("/retries")) {
            return html(200, RetriesPage.render(queries.heldBack(), queries.heldBackKeys(PAGE_ROWS), view));
        } else if (path.equals("/unknown-outcomes")) {
            return html(200, KeysPage.unknownOutcomes(unknownOutcomes.list(PAGE_ROWS), PAGE_ROWS, view));
        } else if (path.equals("/keys")) {
            return showKey(request.parameters().get("tenant"), request.parameters().get("key"), null,
                    resolvedNotice(request.parameters().get("resolved")), view);
        }
        return text(404, "no such page");
    }

    private OutboxConsole.Response post(OutboxConsole.Request request, String user, ConsoleView view) {
        String path = request.path();
        Map<String, String> form = request.parameters();
        Matcher one = ONE.matcher(path);
        if (one.matches() && "/payload".equals(one.group(2))) {
            long id = Long.parseLong(one.group(1));
            Optional<String> payload = actions.revealPayload(user, id);
            return payload.isEmpty() ? text(404, "no dead letter " + id) : showOne(id, payload.get(), view);
        }
        if (path.equals("/keys/stored")) {
            String tenant = form.get("tenant");
            String key = form.get("key");
            ConsoleActions.validateKey(tenant, key);
            Optional<ConsoleQueries.StoredOutcome> stored = actions.revealStored(user, tenant, key);
            return stored.isEmpty() ? text(404, "no key " + key + " for tenant " + tenant) : showKey(tenant, key, stored.get(),
                    null, view);
        }
        boolean requeueOne = one.matches() && "/requeue".equals(one.group(2));
        if (!requeueOne && !ACTIONS.contains(path)) {
            return text(404, "no such action");
        }
        if (readOnly) {
            log.info("console: {} sent {} to a read-only console; refused", user, path);
            return text(403, "refused: this console is read-only");
        }
        if (requeueOne) {
            long id = Long.parseLong(one.group(1));
            boolean done = actions.requeue(user, id);
            return redirect(view.link("/dead-letters?" + (done ? "requeued=" : "gone=") + id));
        }
        if (path.equals("/keys/resolve")) {
            return resolve(form, user, view);
        }
        boolean confirmed = "yes".equals(form.get("confirm"));
        if (path.equals("/dead-letters/requeue-all")) {
            if (!confirmed) {
                return text(400, "requeueing all dead letters needs the confirmation page's confirm=yes");
            }
            List<Long> requeued = actions.requeueMatching(user, DeadLetterFilter.from(form::get));
            return redirect(view.link("/dead-letters?requeuedAll=" + requeued.size()));
        }
        DeadLettersPage.Action action = DeadLettersPage.Action.of(form.get("action"));
        List<Long> ids = selected(form);
        if (action == null || ids.isEmpty()) {
            return text(400, "select at least one dead letter, then requeue or delete them");
        }
        if (!confirmed) {
            return html(200, DeadLettersPage.confirmSelected(action, ids, view));
        }
        return action == DeadLettersPage.Action.DELETE
                ? redirect(view.link("/dead-letters?deleted=" + actions.delete(user, ids).size()))
                : redirect(view.link("/dead-letters?requeuedAll=" + actions.requeue(user, ids).size()));
    }

    private OutboxConsole.Response resolve(Map<String, String> form, String user, ConsoleView view) {
        String tenant = form.get("tenant");
        String key = form.get("key");
        ConsoleActions.validateKey(tenant, key);
        String outcome = form.get("outcome");
        boolean resolved;
        if ("completed".equals(outcome)) {
            resolved = actions.resolveAsSucceeded(user, tenant, key, form.get("result"), form.get("note"));
        } else if ("failed".equals(outcome)) {
            resolved = actions.resolveAsFailed(user, tenant, key, form.get("code"), form.get("message"), form.get("note"));
        } else {
            return text(400, "outcome must be completed or failed");
        }
        return redirect(view.link(KeysPage.path(tenant, key)) + "&resolved="
                + (resolved ? outcome : "none"));
    }

    /** The dead letters a form selected ({@code select.<id>} fields), in id order. */
    private static List<Long> selected(Map<String, String> form) {
        List<Long> ids = new ArrayList<>();
        for (String name : form.keySet()) {
            Matcher matcher = SELECTED.matcher(name);
            if (matcher.matches()) {
                ids.add(Long.parseLong(matcher.group(1)));
            }
        }
        ids.sort(null);
        return ids;
    }

    private OutboxConsole.Response showKey(String tenant, String key, ConsoleQueries.StoredOutcome stored, String notice,
                                           ConsoleView view) {
        if (tenant == null || key == null || tenant.isEmpty() || key.isEmpty()) {
            return html(200, KeysPage.render(tenant, key, null, null, notice, view));
        }
        ConsoleActions.validateKey(tenant, key);
        return html(200, KeysPage.render(tenant, key, queries.key(tenant, key).orElse(null), stored, notice, view));
    }

    private OutboxConsole.Response showOne(long id, String payload, ConsoleView view) {
        Optional<ConsoleQueries.DeadLetterDetail> dead = queries.deadLetter(id);
        if (dead.isEmpty()) {
            return text(404, "no dead letter " + id + " (requeued or published already?)");
        }
        return html(200, DeadLetterPage.render(dead.get(), payload, view));
    }

    private OverviewPage.Overview overview() {
        return new OverviewPage.Overview(backlog.pendingCount(), backlog.oldestPendingAge(), stalledFor.get(), stallAfter,
                deadLetters.count(), queries.retrying(), queries.relays(), queries.partitions(), queries.generations());
    }

    /** The line a redirect's query asks the list to show; only numbers are taken from it. */
    private static String notice(Map<String, String> parameters) {
        for (String name : List.of("requeued", "gone", "requeuedAll", "deleted")) {
            String number = parameters.get(name);
            if (number != null && number.matches("\\d{1,18}")) {
                return switch (name) {
                    case "requeued" -> "Requeued dead letter " + number + ": the relay publishes it again.";
                    case "gone" -> "Dead letter " + number + " is no longer a dead letter (requeued or published already).";
                    case "deleted" -> "Deleted " + number + " dead letters for good.";
                    default -> "Requeued " + number + " dead letters.";
                };
            }
        }
        return null;
    }

    /** The line a resolution's redirect asks the key page to show. */
    private static String resolvedNotice(String resolved) {
        if (resolved == null) {
            return null;
        }
        return switch (resolved) {
            case "completed" -> "Resolved as succeeded: replays return the result given.";
            case "failed" -> "Resolved as failed: replays throw the failure given.";
            case "none" -> "Nothing changed: this key is not an unknown outcome (resolved already?).";
            default -> null;
        };
    }

    private static OutboxConsole.Response resource(String name, String contentType) {
        try (InputStream in = ConsoleHandler.class.getResourceAsStream(name)) {
            return in == null ? text(404, "no such file") : send(200, contentType, in.readAllBytes(), Map.of());
        } catch (IOException e) {
            throw new UncheckedIOException("could not read " + name + " from the console's jar", e);
        }
    }

    private static OutboxConsole.Response redirect(String location) {
        return send(303, "text/plain; charset=utf-8", new byte[0], Map.of("Location", location));
    }

    private static OutboxConsole.Response html(int status, String page) {
        return send(status, "text/html; charset=utf-8", page.getBytes(StandardCharsets.UTF_8), Map.of());
    }

    private static OutboxConsole.Response text(int status, String message) {
        return send(status, "text/plain; charset=utf-8", (message + "\n").getBytes(StandardCharsets.UTF_8), Map.of());
    }

    private static OutboxConsole.Response send(int status, String contentType, byte[] body, Map<String, String> extra) {
        Map<String, String> headers = new LinkedHashMap<>(extra);
        headers.put("Content-Type", contentType);
        headers.put("Cache-Control", "no-store");
        headers.put("X-Content-Type-Options", "nosniff");
        headers.put("X-Frame-Options", "DENY");
        headers.put("Referrer-Policy", "no-referrer");
        headers.put("Content-Security-Policy",
                "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self';"
                        + " form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
        return new OutboxConsole.Response(status, headers, body);
    }
}
