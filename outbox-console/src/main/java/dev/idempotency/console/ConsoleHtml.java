package dev.idempotency.console;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;

/**
 * The console's few HTML helpers: escaping and the page around each body. Pages are a handful of
 * tables and forms, so plain strings with one escaping function stay shorter and easier to audit than
 * a template library and its build step; whatever comes from the database or a request goes through
 * {@link #escape}. Nothing is fetched from elsewhere: the one stylesheet is served from the jar.
 */
final class ConsoleHtml {
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss 'UTC'")
            .withZone(ZoneOffset.UTC);

    private ConsoleHtml() {
    }

    /** {@code text} safe in element content and in double-quoted attribute values; null becomes empty. */
    static String escape(String text) {
        if (text == null) {
            return "";
        }
        StringBuilder out = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '&' -> out.append("&amp;");
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> out.append(c);
            }
        }
        return out.toString();
    }

    /** A whole page: {@code body} is HTML already escaped by the caller; {@code title} is escaped here. */
    static String page(ConsoleView view, String title, String body) {
        return """
                <!DOCTYPE html>
                <html lang="en">
                <head>
                <meta charset="utf-8">
                <meta name="viewport" content="width=device-width, initial-scale=1">
                <title>%2$s · outbox console</title>
                <link rel="stylesheet" href="%1$s/console.css">
                </head>
                <body>
                <header><strong>outbox console</strong>
                <nav><a href="%1$s/">Overview</a> <a href="%1$s/dead-letters">Dead letters</a> <a href="%1$s/retries">Retries</a>
                <a href="%1$s/keys">Keys</a> <a href="%1$s/unknown-outcomes">Unknown outcomes</a></nav>%3$s</header>
                <main>
                <h1>%2$s</h1>
                %4$s
                </main>
                </body>
                </html>
                """.formatted(escape(view.base()), escape(title), view.readOnly() ? "<span class=\"badge\">read-only</span>" : "", body);
    }

    /** A hidden form field, both parts escaped. */
    static String hiddenField(String name, String value) {
        return "<input type=\"hidden\" name=\"" + escape(name) + "\" value=\"" + escape(value) + "\">";
    }

    static String time(Instant instant) {
        return instant == null ? "–" : TIME.format(instant.truncatedTo(ChronoUnit.SECONDS));
    }

    /** A duration as an operator reads it: 0s, 42s, 5m 12s, 3h 4m, 2d 1h. */
    static String duration(Duration duration) {
        long seconds = Math.max(0, duration.toSeconds());
        if (seconds < 60) {
            return seconds + "s";
        }
        if (seconds < 3600) {
            return seconds / 60 + "m " + seconds % 60 + "s";
        }
        if (seconds < 86_400) {
            return seconds / 3600 + "h " + seconds % 3600 / 60 + "m";
        }
        return seconds / 86_400 + "d " + seconds % 86_400 / 3600 + "h";
    }

    /** A last error cut to what fits a table cell; the detail page shows it whole. */
    static String shortened(String error) {
        if (error == null || error.length() <= 160) {
            return error;
        }
        return error.substring(0, 160) + "…";
    }

    static String bytes(long bytes) {
        if (bytes < 1024) {
            return bytes + " B";
        }
        if (bytes < 1024 * 1024) {
            return bytes / 1024 + " KiB";
        }
        if (bytes < 1024L * 1024 * 1024) {
            return bytes / (1024 * 1024) + " MiB";
        }
        return String.format("%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    }
}
