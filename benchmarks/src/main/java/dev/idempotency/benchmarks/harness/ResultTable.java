package dev.idempotency.benchmarks.harness;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The one table the program prints: header lines (date, machine, command), one line per measured
 * row, then the notes; as aligned plain text, or as Markdown for the README.
 */
final class ResultTable {
    private static final String[] COLUMNS =
            {"section", "measured", "callers", "ops/s", "p50 ms", "p99 ms", "client CPU us/op", "client user us/op",
                    "client switches/op", "compared", "target"};
    private static final boolean[] NUMERIC = {false, false, true, true, true, true, true, true, true, false, false};

    private final List<String> header;
    private final List<ResultRow> rows;
    private final List<String> notes;

    ResultTable(List<String> header, List<ResultRow> rows, List<String> notes) {
        this.header = List.copyOf(header);
        this.rows = List.copyOf(rows);
        this.notes = List.copyOf(notes);
    }

    String render(boolean markdown) {
        return markdown ? markdown() : plainText();
    }

    private List<String[]> cells() {
        List<String[]> cells = new ArrayList<>();
        for (ResultRow row : rows) {
            cells.add(new String[] {row.section(), row.measured(), Integer.toString(row.callers()),
                    row.opsPerSecond() == null ? "-" : String.format(Locale.ROOT, "%.0f", row.opsPerSecond()),
                    millis(row.p50Millis()), millis(row.p99Millis()),
                    figure("%.0f", row.client().cpuMicros()), figure("%.0f", row.client().userMicros()),
                    figure("%.2f", row.client().switches()),
                    row.compared().isEmpty() ? "-" : row.compared(), row.target().isEmpty() ? "-" : row.target()});
        }
        return cells;
    }

    private static String figure(String format, double value) {
        return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, format, value);
    }

    private static String millis(Double value) {
        return value == null ? "-" : String.format(Locale.ROOT, "%.3f", value);
    }

    private String plainText() {
        List<String[]> cells = cells();
        int[] widths = new int[COLUMNS.length];
        for (int c = 0; c < COLUMNS.length; c++) {
            widths[c] = COLUMNS[c].length();
            for (String[] line : cells) {
                widths[c] = Math.max(widths[c], line[c].length());
            }
        }
        StringBuilder out = new StringBuilder();
        header.forEach(line -> out.append(line).append('\n'));
        out.append('\n');
        appendLine(out, COLUMNS, widths);
        String[] rule = new String[COLUMNS.length];
        for (int c = 0; c < COLUMNS.length; c++) {
            rule[c] = "-".repeat(widths[c]);
        }
        appendLine(out, rule, widths);
        String previousSection = null;
        for (String[] line : cells) {
            if (previousSection != null && !previousSection.equals(line[0])) {
                out.append('\n');
            }
            previousSection = line[0];
            appendLine(out, line, widths);
        }
        if (!notes.isEmpty()) {
            out.append('\n');
            notes.forEach(note -> out.append("* ").append(note).append('\n'));
        }
        return out.toString();
    }

    private static void appendLine(StringBuilder out, String[] line, int[] widths) {
        StringBuilder text = new StringBuilder();
        for (int c = 0; c < line.length; c++) {
            if (c > 0) {
                text.append("  ");
            }
            String pad = " ".repeat(widths[c] - line[c].length());
            text.append(NUMERIC[c] ? pad + line[c] : line[c] + pad);
        }
        out.append(text.toString().stripTrailing()).append('\n');
    }

    private String markdown() {
        StringBuilder out = new StringBuilder();
        header.forEach(line -> out.append(line).append("  \n"));
        out.append('\n');
        out.append('|').append(String.join("|", COLUMNS)).append("|\n|");
        for (boolean numeric : NUMERIC) {
            out.append(numeric ? "---:|" : "---|");
        }
        out.append('\n');
        for (String[] line : cells()) {
            out.append('|');
            for (String cell : line) {
                out.append(cell.replace("|", "\\|")).append('|');
            }
            out.append('\n');
        }
        if (!notes.isEmpty()) {
            out.append('\n');
            notes.forEach(note -> out.append("- ").append(note).append('\n'));
        }
        return out.toString();
    }
}
