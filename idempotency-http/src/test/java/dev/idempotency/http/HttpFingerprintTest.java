package dev.idempotency.http;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.idempotency.core.RequestFingerprint;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class HttpFingerprintTest {

    private static HttpRequestData.Builder request() {
        return HttpRequestData.builder("POST", "/payments").query("a=1").contentType("application/json")
                .keyFieldLines(List.of("\"k1\"")).body("{\"amount\":10}".getBytes(StandardCharsets.UTF_8));
    }

    private static RequestFingerprint fp(HttpRequestData.Builder b) {
        return HttpFingerprint.of(b.build());
    }

    @Test
    void theSameRequestHasTheSameFingerprintWhateverItsKey() {
        assertEquals(fp(request()), fp(request()));
        assertEquals(fp(request()), fp(request().keyFieldLines(List.of("\"other\""))));
    }

    @Test
    void methodPathQueryContentTypeAndBodyEachChangeIt() {
        RequestFingerprint base = fp(request());
        assertNotEquals(base, HttpFingerprint.of(HttpRequestData.builder("PATCH", "/payments").query("a=1")
                .contentType("application/json").body("{\"amount\":10}".getBytes(StandardCharsets.UTF_8)).build()));
        assertNotEquals(base, HttpFingerprint.of(HttpRequestData.builder("POST", "/refunds").query("a=1")
                .contentType("application/json").body("{\"amount\":10}".getBytes(StandardCharsets.UTF_8)).build()));
        assertNotEquals(base, fp(request().query("a=2")));
        assertNotEquals(base, fp(request().query(null)));
        assertNotEquals(base, fp(request().contentType("application/json; charset=utf-8")));
        assertNotEquals(base, fp(request().contentType(null)));
        assertNotEquals(base, fp(request().body("{\"amount\":11}".getBytes(StandardCharsets.UTF_8))));
        assertNotEquals(base, fp(request().body(new byte[0])));
    }

    @Test
    void fieldsCannotShiftIntoEachOther() {
        assertNotEquals(HttpFingerprint.of(HttpRequestData.builder("POST", "/ab").build()),
                HttpFingerprint.of(HttpRequestData.builder("POST", "/a").query("b").build()));
        assertNotEquals(HttpFingerprint.of(HttpRequestData.builder("POST", "/a").query("x").build()),
                HttpFingerprint.of(HttpRequestData.builder("POST", "/a").contentType("x").build()));
    }

    @Test
    void noQueryAndAnEmptyQueryAreTheSameRequest() {
        assertEquals(fp(request().query(null)), fp(request().query("")));
    }

    @Test
    void itIsTheSha256OfTheDocumentedEncoding() {
        // A stored fingerprint must match the next release's: pin the encoding.
        byte[] body = {1, 2, 3};
        RequestFingerprint expected = RequestFingerprint.ofBytes(concat(
                field("idempotency-http/1".getBytes(StandardCharsets.US_ASCII)), field("POST".getBytes(StandardCharsets.UTF_8)),
                field("/p".getBytes(StandardCharsets.UTF_8)), field(new byte[0]),
                field("text/plain".getBytes(StandardCharsets.UTF_8)), field(HttpFingerprint.sha256(body))));
        assertEquals(expected, HttpFingerprint.of(HttpRequestData.builder("POST", "/p").contentType("text/plain").body(body).build()));
    }

    private static byte[] field(byte[] value) {
        byte[] out = new byte[4 + value.length];
        out[0] = (byte) (value.length >>> 24);
        out[1] = (byte) (value.length >>> 16);
        out[2] = (byte) (value.length >>> 8);
        out[3] = (byte) value.length;
        System.arraycopy(value, 0, out, 4, value.length);
        return out;
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int i = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, i, p.length);
            i += p.length;
        }
        return out;
    }
}
