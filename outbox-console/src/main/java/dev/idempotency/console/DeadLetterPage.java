package dev.idempotency.console;

import static dev.idempotency.console.ConsoleHtml.escape;

/**
 * One dead letter: its ids, key, headers, attempts and last error. The payload is shown only after
 * the operator asks for it (a POST, logged); the requeue and delete buttons are left out in read-only mode.
 */
final class DeadLetterPage {
    private DeadLetterPage() {
    }

    /** The detail; {@code payload} is null unless it was revealed. */
    static String render(ConsoleQueries.DeadLetterDetail dead, String payload, ConsoleView view) {
        StringBuilder body = new StringBuilder("<dl id=\"dead-letter\">");
        row(body, "Outbox id", Long.toString(dead.id()));
        row(body, "Message id", dead.messageId());
        row(body, "Tenant", dead.tenant());
        row(body, "Topic", dead.topic());
        row(body, "Partition key", dead.partitionKey());
        row(body, "Attempts", Integer.toString(dead.attempts()));
        row(body, "Written", ConsoleHtml.time(dead.createdAt()));
        row(body, "In outbox_retries since", ConsoleHtml.time(dead.deadSince()));
        body.append("<dt>Headers</dt><dd><pre>").append(escape(dead.headers())).append("</pre></dd>");
        body.append("<dt>Last error</dt><dd><pre id=\"last-error\">").append(escape(dead.lastError())).append("</pre></dd>");
        body.append("</dl>\n<h2>Payload</h2>\n");
        String self = escape(view.link("/dead-letters/" + dead.id()));
        if (payload == null) {
            body.append("<form method=\"post\" action=\"").append(self).append("/payload\">")
                    .append(view.formFields())
                    .append("<button type=\"submit\" id=\"reveal-payload\">Reveal payload</button>"
                            + " <span class=\"note\">Payloads may hold personal data; revealing is logged.</span></form>\n");
        } else {
            body.append("<pre id=\"payload\">").append(escape(payload)).append("</pre>\n");
        }
        if (!view.readOnly()) {
            body.append("<h2>Requeue</h2>\n<form method=\"post\" action=\"").append(self).append("/requeue\">")
                    .append(view.formFields())
                    .append("<button type=\"submit\" id=\"requeue\">Requeue this event</button>"
                            + " <span class=\"note\">Back in line, attempts reset, due now; published after its key's"
                            + " events that already went out.</span></form>\n");
            body.append("<h2>Delete</h2>\n<form method=\"post\" action=\"").append(escape(view.link("/dead-letters/selected")))
                    .append("\">").append(view.formFields())
                    .append(ConsoleHtml.hiddenField(DeadLettersPage.SELECT + dead.id(), "yes"))
                    .append("<button type=\"submit\" name=\"action\" value=\"delete\" id=\"delete\" class=\"danger\">"
                            + "Delete this event…</button> <span class=\"note\">Asks first; a deleted event is never"
                            + " published.</span></form>\n");
        }
        return ConsoleHtml.page(view, "Dead letter " + dead.id(), body.toString());
    }

    private static void row(StringBuilder body, String label, String value) {
        body.append("<dt>").append(escape(label)).append("</dt><dd>").append(escape(value)).append("</dd>");
    }
}
