package dev.idempotency.console;

import static dev.idempotency.console.ConsoleHtml.escape;

import java.time.Duration;
import java.util.List;

/** The console's first page: backlog, stall, dead letters, the relays and their partitions, the generation tables. */
final class OverviewPage {
    /** What the page shows, read when it is asked for. */
    record Overview(long backlog, Duration oldestPendingAge, Duration stalledFor, Duration stallAfter, long deadLetters,
                    List<ConsoleQueries.Relay> relays, ConsoleQueries.Partitions partitions,
                    List<ConsoleQueries.Generation> generations) {
    }

    private OverviewPage() {
    }

    static String render(Overview o, ConsoleView view) {
        boolean stalled = o.stalledFor().compareTo(o.stallAfter()) >= 0;
        StringBuilder body = new StringBuilder();
        body.append("<section class=\"tiles\">")
                .append(tile("backlog", "Pending events", Long.toString(o.backlog()), false))
                .append(tile("oldest-pending", "Oldest pending", ConsoleHtml.duration(o.oldestPendingAge()), false))
                .append(tile("stalled", "Stalled for", ConsoleHtml.duration(o.stalledFor())
                        + (stalled ? " (over " + ConsoleHtml.duration(o.stallAfter()) + ")" : ""), stalled))
                .append("<a class=\"tile-link\" href=\"").append(escape(view.link("/dead-letters"))).append("\">")
                .append(tile("dead-letters", "Dead letters", Long.toString(o.deadLetters()), o.deadLetters() > 0))
                .append("</a></section>\n");

        body.append("<h2>Relays</h2>\n<p>").append(o.partitions().total()).append(" partitions, ")
                .append(o.partitions().unheld()).append(" held by no relay.</p>\n");
        if (o.relays().isEmpty()) {
            body.append("<p class=\"empty\">No relay heartbeats.</p>\n");
        } else {
            body.append("<table id=\"relays\"><thead><tr><th>Instance</th><th>Alive</th><th>Started</th><th>Heartbeat</th>"
                    + "<th>Partitions held</th><th>Leases end</th></tr></thead><tbody>\n");
            for (ConsoleQueries.Relay relay : o.relays()) {
                body.append("<tr><td>").append(escape(relay.instanceId())).append("</td><td>")
                        .append(relay.alive() ? "yes" : "<span class=\"bad\">no</span>").append("</td><td>")
                        .append(ConsoleHtml.time(relay.startedAt())).append("</td><td>")
                        .append(ConsoleHtml.time(relay.heartbeatAt())).append("</td><td>")
                        .append(relay.partitions().size()).append(relay.partitions().isEmpty() ? "" : ": "
                                + ranges(relay.partitions()))
                        .append("</td><td>").append(leaseEnds(relay)).append("</td></tr>\n");
            }
            body.append("</tbody></table>\n");
        }

        body.append("<h2>Generation tables</h2>\n<p class=\"note\">Catalog estimates as of the last VACUUM or ANALYZE.</p>\n")
                .append("<table id=\"generations\"><thead><tr><th>Table</th><th>Size</th><th>Rows (estimate)</th>"
                        + "<th>Written to</th></tr></thead><tbody>\n");
        for (ConsoleQueries.Generation generation : o.generations()) {
            body.append("<tr><td>").append(escape(generation.table())).append("</td><td>")
                    .append(ConsoleHtml.bytes(generation.bytes())).append("</td><td>")
                    .append(generation.estimatedRows() < 0 ? "not analyzed yet" : Long.toString(generation.estimatedRows()))
                    .append("</td><td>").append(generation.current() ? "yes" : "").append("</td></tr>\n");
        }
        body.append("</tbody></table>\n");
        return ConsoleHtml.page(view, "Overview", body.toString());
    }

    private static String tile(String id, String label, String value, boolean alarm) {
        return "<div class=\"tile" + (alarm ? " alarm" : "") + "\" id=\"" + id + "\"><span class=\"label\">" + escape(label)
                + "</span><span class=\"value\">" + escape(value) + "</span></div>";
    }

    /** Sorted partition numbers as ranges: 0–7, 9, 12–15. */
    static String ranges(List<Integer> sorted) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < sorted.size(); i++) {
            int start = sorted.get(i);
            int end = start;
            while (i + 1 < sorted.size() && sorted.get(i + 1) == end + 1) {
                end = sorted.get(++i);
            }
            out.append(out.length() == 0 ? "" : ", ").append(start).append(end == start ? "" : "–" + end);
        }
        return out.toString();
    }

    private static String leaseEnds(ConsoleQueries.Relay relay) {
        if (relay.firstLeaseEnd() == null) {
            return "–";
        }
        return relay.firstLeaseEnd().equals(relay.lastLeaseEnd()) ? ConsoleHtml.time(relay.firstLeaseEnd())
                : ConsoleHtml.time(relay.firstLeaseEnd()) + " to " + ConsoleHtml.time(relay.lastLeaseEnd());
    }
}
