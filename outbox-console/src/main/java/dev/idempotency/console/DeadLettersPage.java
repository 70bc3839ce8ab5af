package dev.idempotency.console;

import static dev.idempotency.console.ConsoleHtml.escape;

import dev.idempotency.outbox.OutboxDeadLetter;
import java.util.List;

/**
 * The dead letters: the list (no payloads) under its filter, with boxes to select some, and the pages
 * that confirm requeueing or deleting the selected ones and requeueing all that match. A selected dead
 * letter is the form field {@code select.<id>}: the host hands the console one value per field name.
 */
final class DeadLettersPage {
    /** The form field that selects dead letter {@code <id>}: this prefix, then the id. */
    static final String SELECT = "select.";

    /** What can be done to selected dead letters, by the form's {@code action} value. */
    enum Action {
        REQUEUE("requeue", "Requeue"), DELETE("delete", "Delete");

        final String field;
        final String verb;

        Action(String field, String verb) {
            this.field = field;
            this.verb = verb;
        }

        /** The action a form's field names, or null. */
        static Action of(String field) {
            for (Action action : values()) {
                if (action.field.equals(field)) {
                    return action;
                }
            }
            return null;
        }
    }

    private DeadLettersPage() {
    }

    /**
     * The list under {@code filter}; {@code matching} is how many it keeps in all, {@code notice} (plain
     * text, may be null) says what the last action did.
     */
    static String list(List<OutboxDeadLetter> deadLetters, long matching, DeadLetterFilter filter, String notice,
                       ConsoleView view) {
        StringBuilder body = new StringBuilder();
        if (notice != null) {
            body.append("<p class=\"notice\" id=\"notice\">").append(escape(notice)).append("</p>\n");
        }
        filterForm(body, filter, view);
        body.append("<p id=\"dead-letter-count\">").append(matching).append(matching == 1 ? " dead letter" : " dead letters")
                .append(filter.isEmpty() ? "" : matching == 1 ? " matches" : " match")
                .append(matching > deadLetters.size() ? ", the oldest " + deadLetters.size() + " shown" : "").append(".</p>\n");
        if (!view.readOnly() && matching > 0) {
            String query = filter.query();
            body.append("<p><a class=\"button\" id=\"requeue-all\" href=\"")
                    .append(escape(view.link("/dead-letters/requeue-all" + (query.isEmpty() ? "" : "?" + query))))
                    .append("\">Requeue all").append(filter.isEmpty() ? "" : " " + matching + " matching").append("…</a></p>\n");
        }
        if (deadLetters.isEmpty()) {
            return ConsoleHtml.page(view, "Dead letters", body.append("<p class=\"empty\">None.</p>").toString());
        }
        if (!view.readOnly()) {
            body.append("<form method=\"post\" action=\"").append(escape(view.link("/dead-letters/selected"))).append("\">")
                    .append(view.formFields());
        }
        body.append("<table id=\"dead-letters\"><thead><tr>").append(view.readOnly() ? "" : "<th></th>")
                .append("<th>Id</th><th>Tenant</th><th>Topic</th><th>Partition key</th>"
                        + "<th>Attempts</th><th>Last error</th><th>Written</th></tr></thead><tbody>\n");
        for (OutboxDeadLetter dead : deadLetters) {
            body.append("<tr>");
            if (!view.readOnly()) {
                body.append("<td><input type=\"checkbox\" name=\"").append(SELECT).append(dead.id())
                        .append("\" value=\"yes\" id=\"select-").append(dead.id()).append("\" aria-label=\"select ")
                        .append(dead.id()).append("\"></td>");
            }
            body.append("<td><a href=\"").append(escape(view.link("/dead-letters/" + dead.id()))).append("\">").append(dead.id())
                    .append("</a></td><td>").append(escape(dead.tenant())).append("</td><td>").append(escape(dead.topic()))
                    .append("</td><td>").append(escape(dead.partitionKey())).append("</td><td>").append(dead.attempts())
                    .append("</td><td class=\"error\">").append(escape(ConsoleHtml.shortened(dead.lastError())))
                    .append("</td><td>").append(ConsoleHtml.time(dead.createdAt())).append("</td></tr>\n");
        }
        body.append("</tbody></table>\n");
        if (!view.readOnly()) {
            body.append("<p><button type=\"submit\" name=\"action\" value=\"requeue\" id=\"requeue-selected\">"
                    + "Requeue selected…</button> <button type=\"submit\" name=\"action\" value=\"delete\" id=\"delete-selected\""
                    + " class=\"danger\">Delete selected…</button></p></form>\n");
        }
        return ConsoleHtml.page(view, "Dead letters", body.toString());
    }

    /** Asks before every dead letter {@code filter} keeps is put back in line. */
    static String confirmRequeueAll(long matching, DeadLetterFilter filter, ConsoleView view) {
        StringBuilder body = new StringBuilder("<p>Put ").append(filter.isEmpty() ? "all " + matching + " dead letters"
                : "the " + matching + " dead letters that match " + escape(describe(filter)))
                .append(" back in line? Each is published again after its key's events that already went out; while"
                        + " one waits, its key's newer events wait behind it.</p>\n")
                .append("<form method=\"post\" action=\"").append(escape(view.link("/dead-letters/requeue-all"))).append("\">")
                .append(view.formFields());
        filter.fields().forEach((name, value) -> body.append(ConsoleHtml.hiddenField(name, value)));
        body.append(ConsoleHtml.hiddenField("confirm", "yes"))
                .append("<button type=\"submit\" id=\"confirm-requeue-all\">Requeue ").append(filter.isEmpty() ? "all " : "")
                .append(matching).append("</button> <a href=\"").append(escape(view.link("/dead-letters"))).append("\">Cancel</a>")
                .append("</form>\n");
        return ConsoleHtml.page(view, "Requeue all dead letters", body.toString());
    }

    /** Asks before {@code action} is applied to the dead letters {@code ids}. */
    static String confirmSelected(Action action, List<Long> ids, ConsoleView view) {
        StringBuilder body = new StringBuilder("<p>").append(action.verb).append(' ').append(ids.size())
                .append(ids.size() == 1 ? " dead letter" : " dead letters").append(": <span id=\"confirm-ids\">");
        for (int i = 0; i < ids.size(); i++) {
            body.append(i == 0 ? "" : ", ").append(ids.get(i));
        }
        body.append("</span>?</p>\n<p>").append(action == Action.DELETE
                ? "Deleted dead letters are gone for good: they are never published and cannot be requeued."
                : "Each is published again after its key's events that already went out; while one waits, its key's"
                + " newer events wait behind it.").append("</p>\n")
                .append("<form method=\"post\" action=\"").append(escape(view.link("/dead-letters/selected"))).append("\">")
                .append(view.formFields()).append(ConsoleHtml.hiddenField("action", action.field));
        ids.forEach(id -> body.append(ConsoleHtml.hiddenField(SELECT + id, "yes")));
        body.append(ConsoleHtml.hiddenField("confirm", "yes"))
                .append("<button type=\"submit\" id=\"confirm-selected\"").append(action == Action.DELETE ? " class=\"danger\"" : "")
                .append('>').append(action.verb).append(' ').append(ids.size()).append("</button> <a href=\"")
                .append(escape(view.link("/dead-letters"))).append("\">Cancel</a></form>\n");
        return ConsoleHtml.page(view, action.verb + " dead letters", body.toString());
    }

    private static void filterForm(StringBuilder body, DeadLetterFilter filter, ConsoleView view) {
        body.append("<form method=\"get\" action=\"").append(escape(view.link("/dead-letters")))
                .append("\" class=\"filters\" id=\"filter\">")
                .append(input("Topic", "topic", filter.topic())).append(input("Tenant", "tenant", filter.tenant()))
                .append(input("Error contains", "error", filter.error()))
                .append("<label>Older than <select name=\"age\" id=\"filter-age\"><option value=\"\">any age</option>");
        for (DeadLetterFilter.Age age : DeadLetterFilter.Age.values()) {
            body.append("<option value=\"").append(age.field).append('"')
                    .append(age.field.equals(filter.age()) ? " selected" : "").append('>').append(age.label).append("</option>");
        }
        body.append("</select></label> <button type=\"submit\" id=\"apply-filter\">Filter</button>")
                .append(filter.isEmpty() ? "" : " <a href=\"" + escape(view.link("/dead-letters")) + "\">Clear</a>")
                .append("</form>\n");
    }

    private static String input(String label, String name, String value) {
        return "<label>" + label + " <input name=\"" + name + "\" id=\"filter-" + name + "\" value=\"" + escape(value)
                + "\"></label> ";
    }

    /** The filter in words: topic orders, error containing "IBAN", older than 1 hour. */
    private static String describe(DeadLetterFilter filter) {
        StringBuilder text = new StringBuilder();
        filter.fields().forEach((name, value) -> text.append(text.length() == 0 ? "" : ", ").append(switch (name) {
            case "error" -> "error containing \"" + value + "\"";
            case "age" -> "older than " + DeadLetterFilter.Age.of(value).label;
            default -> name + " " + value;
        }));
        return text.toString();
    }
}
