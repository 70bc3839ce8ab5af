package dev.idempotency.console;

import static dev.idempotency.console.ConsoleHtml.escape;

import dev.idempotency.outbox.OutboxDeadLetter;
import java.util.List;

/** The dead letters: the list (no payloads), and the page that confirms requeueing all of them. */
final class DeadLettersPage {
    private DeadLettersPage() {
    }

    /** The list; {@code notice} (plain text, may be null) says what the last action did. */
    static String list(List<OutboxDeadLetter> deadLetters, long total, String notice, ConsoleView view) {
        StringBuilder body = new StringBuilder();
        if (notice != null) {
            body.append("<p class=\"notice\" id=\"notice\">").append(escape(notice)).append("</p>\n");
        }
        body.append("<p id=\"dead-letter-count\">").append(total).append(total == 1 ? " dead letter" : " dead letters")
                .append(total > deadLetters.size() ? ", the oldest " + deadLetters.size() + " shown" : "").append(".</p>\n");
        if (!view.readOnly() && total > 0) {
            body.append("<p><a class=\"button\" id=\"requeue-all\" href=\"").append(escape(view.link("/dead-letters/requeue-all")))
                    .append("\">Requeue all…</a></p>\n");
        }
        if (deadLetters.isEmpty()) {
            return ConsoleHtml.page(view, "Dead letters", body.append("<p class=\"empty\">None.</p>").toString());
        }
        body.append("<table id=\"dead-letters\"><thead><tr><th>Id</th><th>Tenant</th><th>Topic</th><th>Partition key</th>"
                + "<th>Attempts</th><th>Last error</th><th>Written</th></tr></thead><tbody>\n");
        for (OutboxDeadLetter dead : deadLetters) {
            body.append("<tr><td><a href=\"").append(escape(view.link("/dead-letters/" + dead.id()))).append("\">").append(dead.id())
                    .append("</a></td><td>").append(escape(dead.tenant())).append("</td><td>").append(escape(dead.topic()))
                    .append("</td><td>").append(escape(dead.partitionKey())).append("</td><td>").append(dead.attempts())
                    .append("</td><td class=\"error\">").append(escape(shortened(dead.lastError()))).append("</td><td>")
                    .append(ConsoleHtml.time(dead.createdAt())).append("</td></tr>\n");
        }
        body.append("</tbody></table>\n");
        return ConsoleHtml.page(view, "Dead letters", body.toString());
    }

    /** Asks before every dead letter is put back in line. */
    static String confirmRequeueAll(long total, ConsoleView view) {
        String body = "<p>Put all " + total + " dead letters back in line? Each is published again after its key's"
                + " events that already went out; while one waits, its key's newer events wait behind it.</p>\n"
                + "<form method=\"post\" action=\"" + escape(view.link("/dead-letters/requeue-all")) + "\">" + view.formFields()
                + "<input type=\"hidden\" name=\"confirm\" value=\"yes\">"
                + "<button type=\"submit\" id=\"confirm-requeue-all\">Requeue all " + total + "</button> "
                + "<a href=\"" + escape(view.link("/dead-letters")) + "\">Cancel</a></form>\n";
        return ConsoleHtml.page(view, "Requeue all dead letters", body);
    }

    private static String shortened(String error) {
        if (error == null || error.length() <= 160) {
            return error;
        }
        return error.substring(0, 160) + "…";
    }
}
