package dev.idempotency.outbox;

import java.time.Instant;

/**
 * An outbox event the relay gave up on, as {@link OutboxDeadLetters#list(int)} shows it to operators.
 *
 * @param id the outbox id (what {@link OutboxDeadLetters#requeue(long)} takes)
 * @param messageId the message id it was and will be published with (see {@code OutboxEvent.messageId()})
 * @param tenant the tenant that emitted it
 * @param topic its destination
 * @param partitionKey its partition key
 * @param attempts publish attempts made (0 for a row that could not be decoded)
 * @param lastError why it was dead-lettered
 * @param createdAt when it was written (database clock)
 */
public record OutboxDeadLetter(long id, String messageId, String tenant, String topic, String partitionKey, int attempts,
                               String lastError, Instant createdAt) {
}
