/**
 * {@link dev.idempotency.outbox.publisher.rabbitmq.RabbitMqPublisher}: publishes outbox events to
 * RabbitMQ with publisher confirms. The only package that loads the RabbitMQ client
 * ({@code com.rabbitmq:amqp-client}, an optional dependency).
 */
package dev.idempotency.outbox.publisher.rabbitmq;
