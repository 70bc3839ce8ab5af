package dev.idempotency.console;

import static dev.idempotency.console.ConsoleHtml.escape;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.time.Duration;
import java.util.List;

/**
 * The console's first page: a broker outage when one is under way, backlog, stall, dead letters, the
 * events of the last minutes as a chart (drawn by console-charts.js from {@link #ratesJson}), the relays
 * and their partitions, the generation tables.
 */
final class OverviewPage {
    /** What the page shows, read when it is asked for. */
    record Overview(long backlog, Duration oldestPendingAge, Duration stalledFor, Duration stallAfter, long deadLetters,
                    ConsoleQueries.Retrying retrying, List<ConsoleQueries.Relay> relays, ConsoleQueries.Partitions partitions,
                    List<ConsoleQueries.Generation> generations) {
    }

    private OverviewPage() {
    }

    static String render(Overview o, ConsoleView view) {
        boolean stalled = o.stalledFor().compareTo(o.stallAfter()) >= 0;
        StringBuilder body = new StringBuilder();
        body.append(outage(o, stalled));
        body.append("<section class=\"tiles\">")
                .append(tile("backlog", "Pending events", Long.toString(o.backlog()), false))
                .append(tile("oldest-pending", "Oldest pending", ConsoleHtml.duration(o.oldestPendingAge()), false))
                .append(tile("stalled", "Stalled for", ConsoleHtml.duration(o.stalledFor())
                        + (stalled ? " (over " + ConsoleHtml.duration(o.stallAfter()) + ")" : ""), stalled))
                .append("<a class=\"tile-link\" href=\"").append(escape(view.link("/dead-letters"))).append("\">")
                .append(tile("dead-letters", "Dead letters", Long.toString(o.deadLetters()), o.deadLetters() > 0))
                .append("</a></section>\n");

        body.append("<h2>Events, last 15 minutes</h2>\n<div id=\"rates\" class=\"chart\" data-source=\"")
                .append(escape(view.link("/overview/rates.json"))).append("\"></div>\n<p class=\"note\">Per second, by the minute")
                .append(" the events were written: how many were written, and how many of those are published now (the outbox")
                .append(" records no publish time).</p>\n");
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
        body.append("</tbody></table>\n<p class=\"note\">The sweeper's runs are not recorded in the database;"
                + " its log has them.</p>\n");
        body.append("<link rel=\"stylesheet\" href=\"").append(escape(view.link("/assets/uplot.css"))).append("\">\n")
                .append("<script src=\"").append(escape(view.link("/assets/uplot.js"))).append("\"></script>\n")
                .append("<script src=\"").append(escape(view.link("/assets/console-charts.js"))).append("\"></script>\n");
        return ConsoleHtml.page(view, "Overview", body.toString());
    }

    /**
     * The banner of a broker outage: the stall signal /health uses (the same event the oldest pending one
     * for stallAfter, only aging), with the retries that failed and the latest error; retries alone
     * (one event failing, others going out) are a note, not an outage.
     */
    private static String outage(Overview o, boolean stalled) {
        ConsoleQueries.Retrying retrying = o.retrying();
        String failures = retrying.count() == 0 ? "" : " " + retrying.count() + (retrying.count() == 1 ? " event waits" : " events wait")
                + " for another attempt after a failed one; the latest error: " + escape(retrying.lastError());
        if (stalled) {
            return "<p class=\"outage\" id=\"outage\"><strong>Publishing has stopped:</strong> the oldest pending event"
                    + " has waited " + ConsoleHtml.duration(o.oldestPendingAge()) + " and no event has gone out for "
                    + ConsoleHtml.duration(o.stalledFor()) + " (a broker outage, or no relay running)." + failures + "</p>\n";
        }
        return failures.isEmpty() ? "" : "<p class=\"notice-warn\" id=\"retrying\">" + failures.strip() + "</p>\n";
    }

    /** The chart's data as uPlot takes it: minute starts (epoch seconds), then events per second written and published. */
    static String ratesJson(List<ConsoleQueries.Minute> minutes) {
        StringBuilder times = new StringBuilder();
        StringBuilder written = new StringBuilder();
        StringBuilder published = new StringBuilder();
        for (ConsoleQueries.Minute minute : minutes) {
            String comma = times.length() == 0 ? "" : ",";
            times.append(comma).append(minute.start());
            written.append(comma).append(perSecond(minute.written()));
            published.append(comma).append(perSecond(minute.published()));
        }
        return "{\"time\":[" + times + "],\"written\":[" + written + "],\"published\":[" + published + "]}";
    }

    private static String perSecond(long perMinute) {
        return BigDecimal.valueOf(perMinute).divide(BigDecimal.valueOf(60), 2, RoundingMode.HALF_UP)
                .stripTrailingZeros().toPlainString();
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
