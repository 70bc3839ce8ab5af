package dev.idempotency.jdbc;

/** What a committed key row holds, as read after a claim found the key taken. */
record StoredKey(String status, byte[] fingerprint, String resultJson, String resultType, String failureJson,
                 boolean expired) {
    static final String PROCESSING = "processing";
    static final String COMPLETED = "completed";
    static final String FAILED = "failed";
}
