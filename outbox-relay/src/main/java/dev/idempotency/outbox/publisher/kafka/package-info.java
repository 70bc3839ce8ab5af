/**
 * Publishes outbox events to Apache Kafka: {@link dev.idempotency.outbox.publisher.kafka.KafkaPublisher}
 * and its settings. The only package of the relay that loads Kafka classes; kafka-clients is an
 * optional dependency that users of this publisher add themselves.
 */
package dev.idempotency.outbox.publisher.kafka;
