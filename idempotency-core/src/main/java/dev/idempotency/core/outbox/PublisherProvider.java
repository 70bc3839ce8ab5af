package dev.idempotency.core.outbox;

import java.util.Map;

/**
 * Makes a {@link Publisher} by name from string settings: how the relay's command line
 * ({@code --publisher NAME -s KEY=VALUE}) and the Spring Boot starter ({@code idempotency.relay.publisher}
 * and {@code idempotency.relay.settings.*}) find a publisher, the five built-in ones and any other on
 * the class path. Providers are found with {@link java.util.ServiceLoader}: a jar registers its provider
 * in {@code META-INF/services/dev.idempotency.core.outbox.PublisherProvider}, one class name per line.
 *
 * <p>What an implementation promises:
 * <ul>
 *   <li>a public class with a public constructor without arguments, cheap and without side effects:
 *       every provider on the class path is instantiated to learn its name;</li>
 *   <li>neither its constructor nor {@link #name()} loads a broker's client classes, so that only the
 *       chosen publisher's client library is ever loaded; {@link #create(Map)} may;</li>
 *   <li>a {@link #name()} no other provider on the class path has (two providers of one name are
 *       refused when that name is chosen).</li>
 * </ul>
 */
public interface PublisherProvider {

    /**
     * The name a user chooses this publisher by, such as {@code rabbitmq}: lower case letters, digits
     * and {@code -}, constant for the provider's lifetime.
     */
    String name();

    /**
     * A new publisher configured by {@code settings} (for the built-in ones, their configuration
     * builder's {@code settings(Map)}: e.g. {@code host} for {@code rabbitmq}), owned by the caller, which
     * closes it. Validates every setting before anything connects, and refuses an unknown or bad one
     * with an {@link IllegalArgumentException} naming it. Connecting may wait for the first
     * {@link Publisher#publish(java.util.List)}.
     */
    Publisher create(Map<String, String> settings);
}
