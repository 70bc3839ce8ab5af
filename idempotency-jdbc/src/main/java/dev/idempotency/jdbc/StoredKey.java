package dev.idempotency.jdbc;

/**
 * What a committed key row holds, as read after a claim found the key taken. {@code reclaimable}:
 * expired and settled, so a new call may take it over. {@code leaseRanOut}: a lease whose holder
 * overran or died, its outcome unknown, not yet recorded as such by the sweeper.
 */
record StoredKey(String status, byte[] fingerprint, String resultJson, String resultType, String failureJson,
                 boolean reclaimable, boolean leaseRanOut) {
    static final String PROCESSING = "processing";
    static final String COMPLETED = "completed";
    static final String FAILED = "failed";
}
