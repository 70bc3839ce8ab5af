package dev.idempotency.outbox.cli;

import java.util.regex.Pattern;

/** JDBC URLs as they may be shown to a person: with every password masked. */
final class JdbcUrls {
    /** {@code user:secret@} in the authority part, as some drivers and tools write it. */
    private static final Pattern USER_INFO_PASSWORD = Pattern.compile("(//[^/?#@]*?:)[^/?#@]*@");
    /** Any query parameter whose name ends in password ({@code password}, {@code sslpassword}). */
    private static final Pattern PASSWORD_PARAMETER = Pattern.compile("(?i)([?&;][^=&;#]*password=)[^&;#]*");

    private JdbcUrls() {
    }

    /** {@code url} with each password replaced by {@code ***}. */
    static String redacted(String url) {
        if (url == null) {
            return null;
        }
        String masked = USER_INFO_PASSWORD.matcher(url).replaceAll("$1***@");
        return PASSWORD_PARAMETER.matcher(masked).replaceAll("$1***");
    }
}
