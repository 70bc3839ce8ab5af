package dev.idempotency.core.internal;

import dev.idempotency.core.IdempotencyKeys;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.regex.Pattern;

/**
 * The keys a consumer stores, shared by {@link dev.idempotency.core.consumer.IdempotentConsumer} and
 * the batch consumer of {@code idempotency-jdbc}, so that both modes of one consumer name apply a
 * message once between them and count its failed attempts together. Not API.
 */
public final class ConsumerKeys {
    /** Longest accepted consumer name, so that name and message id fit in a key. */
    public static final int MAX_NAME_LENGTH = 100;
    /** Separates the name from the message id in a key; attempt keys use {@link #ATTEMPT_SEPARATOR}. */
    public static final char SEPARATOR = ':';
    private static final char ATTEMPT_SEPARATOR = '#';
    /**
     * Names hold neither separator (nor anything else outside this set), so a key's prefix up to its
     * first separator is its consumer's name: no two consumers, and no message key and attempt key, collide.
     */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]+");

    private ConsumerKeys() {
    }

    /**
     * Checks a consumer's name; returns it.
     *
     * @throws IllegalArgumentException the name is blank, too long, or holds a character other than
     *         ASCII letters, digits, {@code .}, {@code _} and {@code -}
     */
    public static String requireName(String name) {
        Labels.requireLabel("name", name, MAX_NAME_LENGTH);
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("name must hold only ASCII letters, digits, '.', '_' and '-' (was '"
                    + name + "'): '" + SEPARATOR + "' separates the name from the message id in keys, so such a name "
                    + "could take another consumer's keys");
        }
        return name;
    }

    /**
     * The key under which consumer {@code name} applies message {@code messageId} of {@code tenant}.
     *
     * @throws IllegalArgumentException the message id is malformed (the message is invalid)
     * @throws dev.idempotency.core.InvalidIdempotencyKeyException the tenant, or the key they make, is malformed
     */
    public static String messageKey(String name, String messageId, String tenant) {
        Labels.requireLabel("messageId", messageId, IdempotencyKeys.MAX_KEY_LENGTH - MAX_NAME_LENGTH - 1);
        String key = name + SEPARATOR + messageId;
        IdempotencyKeys.validate(key, tenant);
        return key;
    }

    /** The key of failed attempt {@code slot} (from 1) of message {@code messageId}: fixed length, whatever the id's. */
    public static String attemptKey(String name, String messageId, int slot) {
        return name + ATTEMPT_SEPARATOR + digest(messageId) + ATTEMPT_SEPARATOR + slot;
    }

    private static String digest(String messageId) {
        try {
            byte[] hash = MessageDigest.getInstance("SHA-256").digest(messageId.getBytes(StandardCharsets.UTF_8));
            return Base64.getUrlEncoder().withoutPadding().encodeToString(hash);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
