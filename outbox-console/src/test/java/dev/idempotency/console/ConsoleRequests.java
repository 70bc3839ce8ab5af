package dev.idempotency.console;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Requests handed straight to a console, as a host adapts them, and the console's CSRF token read off a page. */
final class ConsoleRequests {
    private static final Pattern CSRF = Pattern.compile("name=\"csrf\" value=\"([^\"]+)\"");

    private ConsoleRequests() {
    }

    static OutboxConsole.Response get(OutboxConsole console, String path) {
        return get(console, path, Map.of());
    }

    /** A GET with the query's {@code parameters}, as the host decodes them. */
    static OutboxConsole.Response get(OutboxConsole console, String path, Map<String, String> parameters) {
        return console.handle(new OutboxConsole.Request("GET", path, parameters, "ops", null));
    }

    static OutboxConsole.Response post(OutboxConsole console, String path, Map<String, String> form) {
        return console.handle(new OutboxConsole.Request("POST", path, form, "ops", null));
    }

    /** The token the forms of {@code page} carry. */
    static String csrfToken(String page) {
        Matcher matcher = CSRF.matcher(page);
        if (!matcher.find()) {
            throw new AssertionError("no CSRF field in the page:\n" + page);
        }
        return matcher.group(1);
    }
}
