package dev.idempotency.benchmarks.sections;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.params.SetParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * The Redis idempotency check as commonly recommended, the alternative section 3 measures: claim a
 * key with {@code SET key processing:<token> NX PX ttl}; on a miss, read the stored response (or see
 * that the key is in progress); after the business transaction commits, store the response with a
 * Lua script that first checks the claim is still ours; on failure, delete the claim the same way.
 * The business transaction and the Redis writes are not atomic together: that is the pattern's
 * known gap, which the executor closes by keeping the key in the business transaction.
 */
final class RedisIdempotency {
    private static final String PROCESSING = "processing:";
    private static final String COMPLETED = "completed:";

    /** Stores the response only if the key still holds our claim; returns 1 when stored, 0 when not. */
    static final String COMPLETE_SCRIPT = """
            if redis.call('GET', KEYS[1]) == ARGV[1] then
              redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
              return 1
            end
            return 0""";

    /** Deletes the key only if it still holds our claim, so a failed caller never frees another's key. */
    static final String RELEASE_SCRIPT = """
            if redis.call('GET', KEYS[1]) == ARGV[1] then
              return redis.call('DEL', KEYS[1])
            end
            return 0""";

    /** What a claim found: our claim token, a stored response to replay, or neither (in progress). */
    record Claim(String token, String storedResponse) {
        boolean claimed() {
            return token != null;
        }
    }

    private final String keyPrefix;
    private final long ttlMillis;
    private final String completeSha;
    private final String releaseSha;

    /** Loads the scripts; keys are written under {@code keyPrefix} so the run can delete them afterwards. */
    RedisIdempotency(Jedis jedis, String keyPrefix, Duration ttl) {
        this.keyPrefix = keyPrefix;
        this.ttlMillis = ttl.toMillis();
        this.completeSha = jedis.scriptLoad(COMPLETE_SCRIPT);
        this.releaseSha = jedis.scriptLoad(RELEASE_SCRIPT);
    }

    Claim claim(Jedis jedis, String tenant, String key) {
        String token = Long.toHexString(ThreadLocalRandom.current().nextLong());
        String redisKey = redisKey(tenant, key);
        if ("OK".equals(jedis.set(redisKey, PROCESSING + token, SetParams.setParams().nx().px(ttlMillis)))) {
            return new Claim(token, null);
        }
        String stored = jedis.get(redisKey);
        if (stored != null && stored.startsWith(COMPLETED)) {
            return new Claim(null, stored.substring(COMPLETED.length()));
        }
        return new Claim(null, null);
    }

    /** Stores {@code response} for a key we claimed; false if the claim expired or was taken meanwhile. */
    boolean complete(Jedis jedis, String tenant, String key, String token, String response) {
        Object stored = jedis.evalsha(completeSha, List.of(redisKey(tenant, key)),
                List.of(PROCESSING + token, COMPLETED + response, Long.toString(ttlMillis)));
        return Long.valueOf(1).equals(stored);
    }

    /** Frees a key we claimed, after the business transaction failed. */
    void release(Jedis jedis, String tenant, String key, String token) {
        jedis.evalsha(releaseSha, List.of(redisKey(tenant, key)), List.of(PROCESSING + token));
    }

    /** Deletes every key this run wrote; returns how many. */
    long deleteAll(Jedis jedis) {
        long deleted = 0;
        ScanParams match = new ScanParams().match(keyPrefix + "*").count(1000);
        String cursor = ScanParams.SCAN_POINTER_START;
        do {
            ScanResult<String> page = jedis.scan(cursor, match);
            if (!page.getResult().isEmpty()) {
                deleted += jedis.unlink(page.getResult().toArray(String[]::new));
            }
            cursor = page.getCursor();
        } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
        return deleted;
    }

    private String redisKey(String tenant, String key) {
        return keyPrefix + tenant + ":" + key;
    }
}
