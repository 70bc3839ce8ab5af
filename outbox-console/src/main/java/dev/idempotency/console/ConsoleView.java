package dev.idempotency.console;

/**
 * What every page needs from the request it answers: where the console is mounted (links start with
 * {@code base}), the hidden fields every form carries (the console's CSRF token and the host's, both
 * escaped already), and whether actions are left out.
 */
record ConsoleView(String base, String formFields, boolean readOnly) {
    /** {@code path} below the console as an absolute link: {@code link("/dead-letters")}. */
    String link(String path) {
        return base + path;
    }
}
