package dev.idempotency.http;

import java.util.List;

/**
 * Parses the key header. A value starting with a double quote is parsed as
 * draft-ietf-httpapi-idempotency-key-header-07 defines it: an Item Structured Field (RFC 8941) whose
 * value is a String; parameters are valid Item syntax but the draft defines none, so they are checked
 * and ignored. Any other value is, with {@link KeySyntax#LENIENT}, the key itself as clients like
 * Stripe's send it (printable ASCII, no spaces, commas or quotes), and malformed with
 * {@link KeySyntax#STRICT}. Lists, two field lines, bad escapes and non-ASCII are malformed either way.
 * Reasons are written for the client and never quote the value.
 */
final class KeyHeaderParser {

    /** The header's value is not one valid sf-string; the message says why, for a problem's detail. */
    static final class MalformedKeyException extends Exception {
        MalformedKeyException(String reason) {
            super(reason, null, false, false);
        }
    }

    private final String input;
    private final KeySyntax syntax;
    private int pos;

    private KeyHeaderParser(String input, KeySyntax syntax) {
        this.input = input;
        this.syntax = syntax;
    }

    /**
     * The key in {@code fieldLines}, which must be exactly one line (the caller handles none), 1 to
     * {@code maxLength} characters after unescaping.
     */
    static String parse(List<String> fieldLines, int maxLength, KeySyntax syntax) throws MalformedKeyException {
        if (fieldLines.size() != 1) {
            throw new MalformedKeyException("it was sent in " + fieldLines.size() + " field lines; send it once");
        }
        String key = new KeyHeaderParser(stripOws(fieldLines.get(0)), syntax).parseItem();
        if (key.isEmpty()) {
            throw new MalformedKeyException("the key is empty");
        }
        if (key.length() > maxLength) {
            throw new MalformedKeyException("the key is longer than " + maxLength + " characters");
        }
        return key;
    }

    private String parseItem() throws MalformedKeyException {
        if (input.isEmpty()) {
            throw new MalformedKeyException("the header is empty");
        }
        for (int i = 0; i < input.length(); i++) {
            char c = input.charAt(i);
            if (c > 0x7e) {
                throw new MalformedKeyException("it contains a non-ASCII character; use printable ASCII only");
            }
        }
        if (input.charAt(pos) != '"') {
            if (syntax == KeySyntax.STRICT) {
                throw new MalformedKeyException("the value is not a quoted string; write it in double quotes");
            }
            return parseUnquoted();
        }
        String value = parseString();
        parseParameters();
        if (pos != input.length()) {
            throw new MalformedKeyException(input.charAt(pos) == ','
                    ? "it holds a list of values; send exactly one key"
                    : "there is text after the quoted string");
        }
        return value;
    }

    /** The whole value as the key, as Stripe's and most clients send it: one run of printable ASCII. */
    private String parseUnquoted() throws MalformedKeyException {
        for (int i = 0; i < input.length(); i++) {
            char c = input.charAt(i);
            if (c == ',') {
                throw new MalformedKeyException("it holds a list of values; send exactly one key");
            }
            if (c == ' ' || c == '\t') {
                throw new MalformedKeyException("an unquoted key contains a space; send it without spaces, or quoted");
            }
            if (c < 0x20) {
                throw new MalformedKeyException("it contains a control character; use printable ASCII only");
            }
            if (c == '"') {
                throw new MalformedKeyException("an unquoted key contains a double quote; send the key unquoted "
                        + "without quotes, or wholly quoted");
            }
        }
        return input;
    }

    /** HTTP strips optional whitespace (SP, HTAB) around a field value; a server may not have. */
    private static String stripOws(String value) {
        int start = 0;
        int end = value.length();
        while (end > start && (value.charAt(end - 1) == ' ' || value.charAt(end - 1) == '\t')) {
            end--;
        }
        while (start < end && (value.charAt(start) == ' ' || value.charAt(start) == '\t')) {
            start++;
        }
        return value.substring(start, end);
    }

    /** RFC 8941 4.2.5. */
    private String parseString() throws MalformedKeyException {
        pos++; // the opening DQUOTE
        StringBuilder out = new StringBuilder();
        while (pos < input.length()) {
            char c = input.charAt(pos++);
            if (c == '\\') {
                if (pos == input.length()) {
                    throw new MalformedKeyException("the quoted string ends in a backslash");
                }
                char next = input.charAt(pos++);
                if (next != '"' && next != '\\') {
                    throw new MalformedKeyException("a backslash may only escape '\"' or '\\'");
                }
                out.append(next);
            } else if (c == '"') {
                return out.toString();
            } else if (c < 0x20 || c > 0x7e) {
                throw new MalformedKeyException("it contains a control character; use printable ASCII only");
            } else {
                out.append(c);
            }
        }
        throw new MalformedKeyException("the quoted string is not closed");
    }

    /** RFC 8941 4.2.3.2: parameters are read and dropped. */
    private void parseParameters() throws MalformedKeyException {
        while (pos < input.length() && input.charAt(pos) == ';') {
            pos++;
            while (pos < input.length() && input.charAt(pos) == ' ') {
                pos++;
            }
            parseKey();
            if (pos < input.length() && input.charAt(pos) == '=') {
                pos++;
                parseBareItem();
            }
        }
    }

    private void parseKey() throws MalformedKeyException {
        if (pos == input.length() || !(isLcAlpha(input.charAt(pos)) || input.charAt(pos) == '*')) {
            throw new MalformedKeyException("a parameter name is malformed");
        }
        while (pos < input.length()) {
            char c = input.charAt(pos);
            if (!(isLcAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*')) {
                break;
            }
            pos++;
        }
    }

    private void parseBareItem() throws MalformedKeyException {
        if (pos == input.length()) {
            throw new MalformedKeyException("a parameter value is missing");
        }
        char c = input.charAt(pos);
        if (c == '-' || isDigit(c)) {
            parseNumber();
        } else if (c == '"') {
            parseString();
        } else if (isAlpha(c) || c == '*') {
            pos++;
            while (pos < input.length() && isTokenChar(input.charAt(pos))) {
                pos++;
            }
        } else if (c == ':') {
            parseByteSequence();
        } else if (c == '?') {
            pos++;
            if (pos == input.length() || (input.charAt(pos) != '0' && input.charAt(pos) != '1')) {
                throw new MalformedKeyException("a boolean parameter value is malformed");
            }
            pos++;
        } else {
            throw new MalformedKeyException("a parameter value is malformed");
        }
    }

    /** RFC 8941 4.2.4, checking the shape only. */
    private void parseNumber() throws MalformedKeyException {
        if (input.charAt(pos) == '-') {
            pos++;
        }
        int start = pos;
        int dot = -1;
        while (pos < input.length()) {
            char c = input.charAt(pos);
            if (isDigit(c)) {
                pos++;
            } else if (c == '.' && dot < 0) {
                if (pos - start > 12) {
                    throw new MalformedKeyException("a decimal parameter value is malformed");
                }
                dot = pos++;
            } else {
                break;
            }
        }
        int length = pos - start;
        if (length == 0 || (dot < 0 && length > 15) || (dot >= 0 && (dot == pos - 1 || pos - dot - 1 > 3 || length > 16))) {
            throw new MalformedKeyException("a numeric parameter value is malformed");
        }
    }

    /** RFC 8941 4.2.7. */
    private void parseByteSequence() throws MalformedKeyException {
        pos++;
        while (pos < input.length() && input.charAt(pos) != ':') {
            char c = input.charAt(pos);
            if (!(isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=')) {
                throw new MalformedKeyException("a byte-sequence parameter value is malformed");
            }
            pos++;
        }
        if (pos == input.length()) {
            throw new MalformedKeyException("a byte-sequence parameter value is not closed");
        }
        pos++;
    }

    private static boolean isLcAlpha(char c) {
        return c >= 'a' && c <= 'z';
    }

    private static boolean isAlpha(char c) {
        return isLcAlpha(c) || (c >= 'A' && c <= 'Z');
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    /** tchar, ':' and '/' (RFC 8941 sf-token). */
    private static boolean isTokenChar(char c) {
        return isAlpha(c) || isDigit(c) || "!#$%&'*+-.^_`|~:/".indexOf(c) >= 0;
    }
}
