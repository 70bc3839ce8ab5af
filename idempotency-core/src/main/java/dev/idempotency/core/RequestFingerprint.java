package dev.idempotency.core;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * A SHA-256 digest of a request, stored with its key so that reusing the key for a different
 * request is refused ({@link KeyReusedException}) instead of replaying the wrong outcome.
 */
public final class RequestFingerprint {
    /** Sorted keys make the digest independent of property and map order. */
    private static final ObjectMapper CANONICAL = JsonMapper.builder()
            .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS)
            .enable(com.fasterxml.jackson.databind.MapperFeature.SORT_PROPERTIES_ALPHABETICALLY)
            .build();

    private final byte[] digest;

    private RequestFingerprint(byte[] digest) {
        this.digest = digest;
    }

    /** The digest of {@code request} serialized as JSON with its properties and map keys sorted. */
    public static RequestFingerprint ofJson(Object request) {
        Objects.requireNonNull(request, "request");
        try {
            return ofBytes(CANONICAL.writeValueAsBytes(request));
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("request cannot be serialized to JSON for fingerprinting: " + e.getOriginalMessage(), e);
        }
    }

    /** The digest of the UTF-8 bytes of {@code request}, e.g. a raw HTTP body. */
    public static RequestFingerprint ofString(String request) {
        Objects.requireNonNull(request, "request");
        return ofBytes(request.getBytes(StandardCharsets.UTF_8));
    }

    /** The digest of {@code request}. */
    public static RequestFingerprint ofBytes(byte[] request) {
        Objects.requireNonNull(request, "request");
        try {
            return new RequestFingerprint(MessageDigest.getInstance("SHA-256").digest(request));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime provides SHA-256", e);
        }
    }

    /** Rebuilds a fingerprint from a stored digest. */
    public static RequestFingerprint fromDigest(byte[] digest) {
        Objects.requireNonNull(digest, "digest");
        return new RequestFingerprint(digest.clone());
    }

    /** The digest bytes (a copy). */
    public byte[] digest() {
        return digest.clone();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RequestFingerprint other && MessageDigest.isEqual(digest, other.digest);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(digest);
    }

    @Override
    public String toString() {
        return "RequestFingerprint[" + HexFormat.of().formatHex(digest) + "]";
    }
}
