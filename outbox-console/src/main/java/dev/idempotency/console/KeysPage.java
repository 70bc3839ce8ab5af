package dev.idempotency.console;

import static dev.idempotency.console.ConsoleHtml.escape;

import dev.idempotency.jdbc.UnknownOutcomes;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Idempotency keys: one {@code (tenant, key)} looked up (its state, when it was claimed and expires,
 * what it stores: the stored result and failure only after the operator asks, a logged POST), and the
 * unknown outcomes waiting for an operator, each resolved from its key's page as succeeded or failed
 * with a note. The resolve forms are left out in read-only mode.
 */
final class KeysPage {
    private KeysPage() {
    }

    /** The path below the console of key {@code key} of {@code tenant}'s page, its query URL-encoded. */
    static String path(String tenant, String key) {
        return "/keys?tenant=" + URLEncoder.encode(tenant, StandardCharsets.UTF_8)
                + "&key=" + URLEncoder.encode(key, StandardCharsets.UTF_8);
    }

    /**
     * The lookup form and, once one was asked for, the key: {@code state} null means no such key;
     * {@code stored} is null unless revealed; {@code notice} (plain text, may be null) says what the
     * last action did.
     */
    static String render(String tenant, String key, ConsoleQueries.KeyState state, ConsoleQueries.StoredOutcome stored,
                         String notice, ConsoleView view) {
        StringBuilder body = new StringBuilder();
        if (notice != null) {
            body.append("<p class=\"notice\" id=\"notice\">").append(escape(notice)).append("</p>\n");
        }
        body.append("<form method=\"get\" action=\"").append(escape(view.link("/keys"))).append("\" class=\"filters\">")
                .append("<label>Tenant <input name=\"tenant\" id=\"lookup-tenant\" required value=\"").append(escape(tenant))
                .append("\"></label> <label>Key <input name=\"key\" id=\"lookup-key\" required size=\"40\" value=\"")
                .append(escape(key)).append("\"></label> <button type=\"submit\" id=\"lookup\">Look up</button></form>\n");
        if (tenant == null || key == null) {
            return ConsoleHtml.page(view, "Keys", body.toString());
        }
        if (state == null) {
            body.append("<p class=\"empty\" id=\"no-key\">No key ").append(escape(key)).append(" for tenant ")
                    .append(escape(tenant)).append(" (never claimed, or purged after its retention).</p>\n");
            return ConsoleHtml.page(view, "Keys", body.toString());
        }
        body.append("<dl id=\"key\">");
        row(body, "Tenant", state.tenant());
        row(body, "Key", state.key());
        body.append("<dt>State</dt><dd id=\"key-state\"").append(state.unknownOutcome() ? " class=\"bad\"" : "").append('>')
                .append(escape(describe(state))).append("</dd>");
        row(body, "Claimed", ConsoleHtml.time(state.claimedAt()));
        row(body, "Last changed", ConsoleHtml.time(state.updatedAt()));
        if (state.leaseExpiresAt() != null) {
            row(body, state.leaseRanOut() || state.unknownOutcome() ? "Lease ran out" : "Lease ends",
                    ConsoleHtml.time(state.leaseExpiresAt()));
        }
        row(body, "Expires", state.unknownOutcome() || "processing".equals(state.status())
                ? "not while its outcome is open (" + ConsoleHtml.time(state.expiresAt()) + " otherwise)"
                : ConsoleHtml.time(state.expiresAt()));
        row(body, "Stores", stores(state));
        body.append("</dl>\n");
        hidden(body, state, stored, view);
        if (state.unknownOutcome() && !view.readOnly()) {
            resolveForms(body, state, view);
        }
        return ConsoleHtml.page(view, "Keys", body.toString());
    }

    /** The keys whose outcome nobody knows, oldest lease first, each linking to its page. */
    static String unknownOutcomes(List<UnknownOutcomes.UnknownOutcome> outcomes, int limit, ConsoleView view) {
        StringBuilder body = new StringBuilder("<p class=\"note\">Lease-mode keys whose holder died or overran its lease:"
                + " every retry replays the failure <code>lease_expired</code> until an operator records what really"
                + " happened. Look each key up in the external system (most payment providers take it as their own"
                + " idempotency key), then resolve it from its page.</p>\n");
        if (outcomes.isEmpty()) {
            return ConsoleHtml.page(view, "Unknown outcomes", body.append("<p class=\"empty\">None.</p>").toString());
        }
        if (outcomes.size() >= limit) {
            body.append("<p>The oldest ").append(limit).append(" shown.</p>\n");
        }
        body.append("<table id=\"unknown-outcomes\"><thead><tr><th>Tenant</th><th>Key</th><th>Claimed</th>"
                + "<th>Lease ran out</th></tr></thead><tbody>\n");
        for (UnknownOutcomes.UnknownOutcome outcome : outcomes) {
            body.append("<tr><td>").append(escape(outcome.tenant())).append("</td><td><a href=\"")
                    .append(escape(view.link(path(outcome.tenant(), outcome.key())))).append("\">").append(escape(outcome.key()))
                    .append("</a></td><td>").append(ConsoleHtml.time(outcome.claimedAt())).append("</td><td>")
                    .append(ConsoleHtml.time(outcome.leaseExpiredAt())).append("</td></tr>\n");
        }
        body.append("</tbody></table>\n");
        return ConsoleHtml.page(view, "Unknown outcomes", body.toString());
    }

    static String describe(ConsoleQueries.KeyState state) {
        String expired = state.expired() ? "; expired: the next call with this key runs again" : "";
        if (state.unknownOutcome()) {
            return "unknown outcome (lease_expired): waiting for an operator";
        }
        if ("processing".equals(state.status())) {
            if (state.leaseRanOut()) {
                return "processing, but its lease ran out: the sweeper records it as an unknown outcome";
            }
            return state.leaseExpiresAt() == null ? "processing" : "processing under a lease";
        }
        if ("failed".equals(state.status())) {
            return "failed with code " + state.failureCode() + expired;
        }
        return state.status() + expired;
    }

    private static String stores(ConsoleQueries.KeyState state) {
        if (state.hasResult()) {
            return "a result" + (state.resultType() == null ? "" : " (" + state.resultType() + ")");
        }
        if (state.failureCode() != null) {
            return "a failure (" + state.failureCode() + ")";
        }
        return "nothing yet";
    }

    private static void hidden(StringBuilder body, ConsoleQueries.KeyState state, ConsoleQueries.StoredOutcome stored,
                               ConsoleView view) {
        if (!state.hasResult() && state.failureCode() == null) {
            return;
        }
        body.append("<h2>What it stores</h2>\n");
        if (stored == null) {
            body.append("<form method=\"post\" action=\"").append(escape(view.link("/keys/stored"))).append("\">")
                    .append(view.formFields())
                    .append(keyFields(state))
                    .append("<button type=\"submit\" id=\"reveal-stored\">Reveal result and failure</button>"
                            + " <span class=\"note\">Results may hold personal data; revealing is logged.</span></form>\n");
            return;
        }
        if (stored.result() != null) {
            body.append("<h3>Result</h3><pre id=\"stored-result\">").append(escape(stored.result())).append("</pre>\n");
        }
        if (stored.failure() != null) {
            body.append("<h3>Failure</h3><pre id=\"stored-failure\">").append(escape(stored.failure())).append("</pre>\n");
        }
    }

    private static void resolveForms(StringBuilder body, ConsoleQueries.KeyState state, ConsoleView view) {
        body.append("<h2>Resolve</h2>\n<p class=\"note\">Record what really happened, as the external system tells it."
                + " Replays then return that outcome for at least one more retention. The note goes to the console's"
                + " action log with your name.</p>\n");
        body.append("<form method=\"post\" action=\"").append(escape(view.link("/keys/resolve")))
                .append("\" class=\"resolve\">")
                .append(view.formFields()).append(keyFields(state))
                .append(ConsoleHtml.hiddenField("outcome", "completed"))
                .append("<h3>It took effect</h3><label>Result, as JSON: what the call would have returned"
                        + " (e.g. <code>\"ch_1\"</code> or <code>{\"chargeId\": \"ch_1\"}</code>)"
                        + "<textarea name=\"result\" id=\"resolve-result\" rows=\"3\" required></textarea></label>")
                .append("<label>Note <input name=\"note\" id=\"resolve-completed-note\" required maxlength=\"")
                .append(ConsoleActions.MAX_NOTE_LENGTH).append("\" size=\"60\"></label>")
                .append("<button type=\"submit\" id=\"resolve-completed\">Resolve as succeeded</button></form>\n");
        body.append("<form method=\"post\" action=\"").append(escape(view.link("/keys/resolve")))
                .append("\" class=\"resolve\">")
                .append(view.formFields()).append(keyFields(state))
                .append(ConsoleHtml.hiddenField("outcome", "failed"))
                .append("<h3>It failed for good</h3><label>Failure code <input name=\"code\" id=\"resolve-code\" required"
                        + " maxlength=\"100\" placeholder=\"card_declined\"></label>")
                .append("<label>Message replays throw <input name=\"message\" id=\"resolve-message\" required size=\"60\">"
                        + "</label>")
                .append("<label>Note <input name=\"note\" id=\"resolve-failed-note\" required maxlength=\"")
                .append(ConsoleActions.MAX_NOTE_LENGTH).append("\" size=\"60\"></label>")
                .append("<button type=\"submit\" id=\"resolve-failed\">Resolve as failed</button></form>\n");
    }

    private static String keyFields(ConsoleQueries.KeyState state) {
        return ConsoleHtml.hiddenField("tenant", state.tenant()) + ConsoleHtml.hiddenField("key", state.key());
    }

    private static void row(StringBuilder body, String label, String value) {
        body.append("<dt>").append(escape(label)).append("</dt><dd>").append(escape(value)).append("</dd>");
    }
}
