package dev.idempotency.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * The key header as an RFC 8941 Item whose value is a String (draft-ietf-httpapi-idempotency-key-header-07),
 * and, in the default lenient syntax, also unquoted as Stripe's and most clients send it.
 */
class KeyHeaderParserTest {

    /** Strict: draft-07 to the letter. */
    private static String parse(String line) throws KeyHeaderParser.MalformedKeyException {
        return KeyHeaderParser.parse(List.of(line), 255, KeySyntax.STRICT);
    }

    private static String lenient(String line) throws KeyHeaderParser.MalformedKeyException {
        return KeyHeaderParser.parse(List.of(line), 255, KeySyntax.LENIENT);
    }

    @Test
    void theDraftsExampleIsAKey() throws Exception {
        assertEquals("8e03978e-40d5-43e8-bc93-6894a57f9324", parse("\"8e03978e-40d5-43e8-bc93-6894a57f9324\""));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '\u0000', ignoreLeadingAndTrailingWhitespace = false, value = {
        "\"abc\"|abc",
        "  \"abc\"  |abc",
        "\t\"abc\"\t|abc",
        "\"a b ~!#$%&'()*+,-./:;<=>?@[]^_`{}\"|a b ~!#$%&'()*+,-./:;<=>?@[]^_`{}",
        "\"with \\\"quotes\\\"\"|with \"quotes\"",
        "\"back\\\\slash\"|back\\slash",
        "\"k\";a|k",
        "\"k\";a=1;b=-2.5;c=?0;d=\"x\";e=tok/en:1;f=:aGk=:;*g=*h|k",
        "\"k\"; a=1|k",
    })
    void validStringItemsAreKeys(String header, String key) throws Exception {
        assertEquals(key, parse(header));
    }

    @Test
    void pipesInsideTheStringAreKept() throws Exception {
        assertEquals("a|b}", parse("\"a|b}\""));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "",                       // empty field value
        "   ",                    // only whitespace
        "\"\"",                   // empty string: no key
        "abc",                    // a token, not a string
        "8e03978e-40d5",          // unquoted UUID
        "123",                    // an integer
        "?1",                     // a boolean
        ":YWJj:",                 // a byte sequence
        "\"abc\", \"def\"",       // a list
        "\"abc\",",               // a list with a trailing comma
        "(\"abc\")",              // an inner list
        "\"abc",                  // unclosed
        "\"abc\\\"",              // the closing quote is escaped
        "\"a\\b\"",               // an escape other than \" and \\
        "\"a\\",                  // a trailing backslash
        "\"a\tb\"",               // a tab inside the string
        "\"a\u0001b\"",           // a control character
        "\"a\u007fb\"",           // DEL
        "\"caf\u00e9\"",          // non-ASCII
        "\"abc\" x",              // text after the item
        "\"abc\"x",
        "\"abc\";",               // a parameter without a name
        "\"abc\";A=1",            // upper-case parameter name
        "\"abc\";a=",             // a parameter without a value
        "\"abc\";a=1.2345",       // decimal with 4 fraction digits
        "\"abc\";a=1.",           // decimal without fraction digits
        "\"abc\";a=1234567890123456", // integer of 16 digits
        "\"abc\";a=:aGk=",        // unclosed byte sequence
        "\"abc\";a=?2",           // bad boolean
        "'abc'",                  // single quotes
    })
    void inStrictSyntaxAnythingElseIsMalformed(String header) {
        assertThrows(KeyHeaderParser.MalformedKeyException.class, () -> parse(header));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', quoteCharacter = '\u0000', ignoreLeadingAndTrailingWhitespace = false, value = {
        "8e03978e-40d5-43e8-bc93-6894a57f9324|8e03978e-40d5-43e8-bc93-6894a57f9324",
        "\"8e03978e-40d5-43e8-bc93-6894a57f9324\"|8e03978e-40d5-43e8-bc93-6894a57f9324",
        "  abc\t|abc",
        "abc|abc",
        "\"abc\"|abc",
        "\"abc\";a=1|abc",
        "123|123",
        "order_42:retry/1|order_42:retry/1",
        "'abc'|'abc'",
        "a;b=c|a;b=c",
        "back\\slash|back\\slash",
    })
    void byDefaultAKeyIsTakenUnquotedOrQuotedAndBothFormsAreTheSameKey(String header, String key) throws Exception {
        assertEquals(key, lenient(header));
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "",                       // empty field value
        "   ",                    // only whitespace
        "\"\"",                   // empty string: no key
        "abc, def",               // a list
        "abc,",                   // a list with a trailing comma
        "\"abc\", \"def\"",       // a list of strings
        "(\"abc\")",              // an inner list
        "two words",              // a space inside an unquoted key
        "a\tb",                   // a tab inside an unquoted key
        "a\u0001b",               // a control character
        "a\u007fb",               // DEL
        "caf\u00e9",              // non-ASCII
        "\"caf\u00e9\"",          // non-ASCII, quoted
        "ab\"c",                  // a quote inside an unquoted key
        "\"abc",                  // an unclosed quoted key
        "\"abc\" x",              // text after a quoted key
        "\"a\\b\"",               // a bad escape in a quoted key
    })
    void byDefaultListsSpacesControlAndNonAsciiCharactersAreStillMalformed(String header) {
        assertThrows(KeyHeaderParser.MalformedKeyException.class, () -> lenient(header));
    }

    @Test
    void twoFieldLinesAreMalformedEvenIfEachIsAValidKey() {
        for (KeySyntax syntax : KeySyntax.values()) {
            KeyHeaderParser.MalformedKeyException e = assertThrows(KeyHeaderParser.MalformedKeyException.class,
                    () -> KeyHeaderParser.parse(List.of("\"abc\"", "\"abc\""), 255, syntax));
            assertTrue(e.getMessage().contains("2 field lines"), e.getMessage());
        }
        assertThrows(KeyHeaderParser.MalformedKeyException.class,
                () -> KeyHeaderParser.parse(List.of("abc", "abc"), 255, KeySyntax.LENIENT));
    }

    @Test
    void aKeyOverTheLengthLimitIsMalformedAndOneAtTheLimitIsNot() throws Exception {
        String atLimit = "k".repeat(10);
        for (KeySyntax syntax : KeySyntax.values()) {
            assertEquals(atLimit, KeyHeaderParser.parse(List.of("\"" + atLimit + "\""), 10, syntax));
            assertThrows(KeyHeaderParser.MalformedKeyException.class,
                    () -> KeyHeaderParser.parse(List.of("\"" + atLimit + "k\""), 10, syntax));
            // The limit counts the unescaped key: ten characters, two of them escaped.
            assertEquals("kkkkkkkk\"\\", KeyHeaderParser.parse(List.of("\"kkkkkkkk\\\"\\\\\""), 10, syntax));
        }
        assertEquals(atLimit, KeyHeaderParser.parse(List.of(atLimit), 10, KeySyntax.LENIENT));
        assertThrows(KeyHeaderParser.MalformedKeyException.class,
                () -> KeyHeaderParser.parse(List.of(atLimit + "k"), 10, KeySyntax.LENIENT));
    }

    @Test
    void reasonsNeverQuoteTheValue() {
        KeyHeaderParser.MalformedKeyException e = assertThrows(KeyHeaderParser.MalformedKeyException.class,
                () -> parse("\"secret\", \"other\""));
        assertEquals("it holds a list of values; send exactly one key", e.getMessage());
        e = assertThrows(KeyHeaderParser.MalformedKeyException.class, () -> lenient("secret other"));
        assertFalse(e.getMessage().contains("secret"), e.getMessage());
    }
}
