package dev.idempotency.http;

import dev.idempotency.core.RequestFingerprint;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The fingerprint of a keyed request: method, path, query, content type and the SHA-256 of the body,
 * each length-prefixed so no two requests share an encoding. A missing and an empty query (or content
 * type) count as the same. The version tag lets a future encoding never collide with this one.
 */
final class HttpFingerprint {
    private static final byte[] VERSION = "idempotency-http/1".getBytes(StandardCharsets.US_ASCII);

    private HttpFingerprint() {
    }

    static RequestFingerprint of(HttpRequestData request) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(128);
        field(out, VERSION);
        field(out, utf8(request.method()));
        field(out, utf8(request.path()));
        field(out, utf8(request.query()));
        field(out, utf8(request.contentType()));
        field(out, sha256(request.bodyNoCopy()));
        return RequestFingerprint.ofBytes(out.toByteArray());
    }

    private static byte[] utf8(String s) {
        return s == null ? new byte[0] : s.getBytes(StandardCharsets.UTF_8);
    }

    private static void field(ByteArrayOutputStream out, byte[] value) {
        int n = value.length;
        out.write(n >>> 24);
        out.write(n >>> 16);
        out.write(n >>> 8);
        out.write(n);
        out.writeBytes(value);
    }

    static byte[] sha256(byte[] bytes) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(bytes);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime provides SHA-256", e);
        }
    }
}
