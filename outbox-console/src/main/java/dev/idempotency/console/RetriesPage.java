package dev.idempotency.console;

import static dev.idempotency.console.ConsoleHtml.escape;

import java.util.List;

/**
 * The keys held back behind a retry and when each is next tried, as outbox_retries records them. What
 * the relay holds only in memory (when it next scans for due retries, a broker outage's pause) is not
 * shown: the page says so.
 */
final class RetriesPage {
    private RetriesPage() {
    }

    static String render(ConsoleQueries.HeldBack total, List<ConsoleQueries.HeldBackKey> keys, ConsoleView view) {
        StringBuilder body = new StringBuilder();
        body.append("<p id=\"held-back-count\">").append(total.keys()).append(total.keys() == 1 ? " key" : " keys")
                .append(" held back behind a retry, ").append(total.events()).append(total.events() == 1 ? " event" : " events")
                .append(" waiting in all").append(total.keys() > keys.size() ? "; the " + keys.size() + " due soonest shown" : "")
                .append(".</p>\n<p class=\"note\">A key's events go out in id order: its first waiting event is retried"
                        + " once its next attempt is due, and the others follow it. A relay looks for due retries at"
                        + " least every idlePollMin (50 ms by default) while any are pending; during a broker outage it pauses all"
                        + " publishing, which it holds in memory only (see its log and"
                        + " outbox_oldest_pending_stalled_seconds). Times are the database's, in UTC.</p>\n");
        if (keys.isEmpty()) {
            return ConsoleHtml.page(view, "Retries", body.append("<p class=\"empty\">None.</p>").toString());
        }
        body.append("<table id=\"held-back\"><thead><tr><th>Tenant</th><th>Topic</th><th>Partition key</th>"
                + "<th>Next event</th><th>Attempts</th><th>Next attempt</th><th>Waiting</th><th>Last error</th>"
                + "</tr></thead><tbody>\n");
        for (ConsoleQueries.HeldBackKey key : keys) {
            body.append("<tr><td>").append(escape(key.tenant())).append("</td><td>").append(escape(key.topic()))
                    .append("</td><td>").append(escape(key.partitionKey())).append("</td><td>").append(key.firstEventId())
                    .append("</td><td>").append(key.attempts()).append("</td><td>").append(ConsoleHtml.time(key.nextAttemptAt()))
                    .append("</td><td>").append(key.waiting()).append("</td><td class=\"error\">")
                    .append(escape(ConsoleHtml.shortened(key.lastError()))).append("</td></tr>\n");
        }
        body.append("</tbody></table>\n");
        return ConsoleHtml.page(view, "Retries", body.toString());
    }
}
