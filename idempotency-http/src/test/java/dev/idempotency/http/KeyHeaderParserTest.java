package dev.idempotency.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/** The key header as an RFC 8941 Item whose value is a String (draft-ietf-httpapi-idempotency-key-header-07). */
class KeyHeaderParserTest {

    private static String parse(String line) throws KeyHeaderParser.MalformedKeyException {
        return KeyHeaderParser.parse(List.of(line), 255);
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
    void anythingElseIsMalformed(String header) {
        assertThrows(KeyHeaderParser.MalformedKeyException.class, () -> parse(header));
    }

    @Test
    void twoFieldLinesAreMalformedEvenIfEachIsAValidString() {
        KeyHeaderParser.MalformedKeyException e = assertThrows(KeyHeaderParser.MalformedKeyException.class,
                () -> KeyHeaderParser.parse(List.of("\"abc\"", "\"abc\""), 255));
        assertTrue(e.getMessage().contains("2 field lines"), e.getMessage());
    }

    @Test
    void aKeyOverTheLengthLimitIsMalformedAndOneAtTheLimitIsNot() throws Exception {
        String atLimit = "k".repeat(10);
        assertEquals(atLimit, KeyHeaderParser.parse(List.of("\"" + atLimit + "\""), 10));
        assertThrows(KeyHeaderParser.MalformedKeyException.class, () -> KeyHeaderParser.parse(List.of("\"" + atLimit + "k\""), 10));
        // The limit counts the unescaped key: ten characters, two of them escaped.
        assertEquals("kkkkkkkk\"\\", KeyHeaderParser.parse(List.of("\"kkkkkkkk\\\"\\\\\""), 10));
    }

    @Test
    void reasonsNeverQuoteTheValue() {
        KeyHeaderParser.MalformedKeyException e = assertThrows(KeyHeaderParser.MalformedKeyException.class,
                () -> parse("\"secret\", \"other\""));
        assertEquals("it holds a list of values; send exactly one key", e.getMessage());
    }
}
