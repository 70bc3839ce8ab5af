package dev.idempotency.http;

/** Which spellings of the key header {@link IdempotentHttp} accepts; {@link #LENIENT} by default. */
public enum KeySyntax {
    /**
     * Keys as clients send them: the draft's quoted Structured Field String
     * ({@code Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"}) and the unquoted value Stripe's
     * SDKs and most clients send ({@code Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324}) name
     * the same key. An unquoted key is printable ASCII without spaces, commas or double quotes; lists,
     * several field lines, empty and over-long keys, control and non-ASCII characters are refused in
     * both forms.
     */
    LENIENT,
    /**
     * draft-ietf-httpapi-idempotency-key-header-07 to the letter: only an Item Structured Field
     * (RFC 8941) whose value is a String, i.e. the quoted form.
     */
    STRICT
}
