package dev.idempotency.outbox.publisher;

import dev.idempotency.core.outbox.Publisher;
import dev.idempotency.core.outbox.PublisherProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.TreeMap;

/**
 * Builds a publisher by name from string settings, for the command line and the Spring Boot
 * starter: the {@link PublisherProvider} of that name on the class path makes it. The built-in ones
 * are {@code log}, {@code http}, {@code rabbitmq}, {@code nats} and {@code kafka}; a jar that
 * registers a provider in {@code META-INF/services/dev.idempotency.core.outbox.PublisherProvider}
 * adds its own. Only the chosen publisher's classes, and so only its client library, are loaded:
 * {@code log} and {@code http} need no broker client on the class path.
 *
 * <p>Providers are looked up with {@link ServiceLoader} on the thread's context class loader (the
 * application's class loader when it has none), at each call.
 */
public final class Publishers {

    private Publishers() {
    }

    /**
     * The publisher called {@code name}, made by its provider from {@code settings} (for a built-in
     * one, as its configuration builder's {@code settings(Map)} reads them: e.g. {@code base-url} for
     * {@code http}); the caller closes it. An {@link IllegalArgumentException} names an unknown
     * publisher (with the names found), a name two providers on the class path share, or a bad
     * setting; an {@link IllegalStateException} says that a provider could not be loaded.
     */
    public static Publisher create(String name, Map<String, String> settings) {
        Map<String, List<PublisherProvider>> providers = providers();
        List<PublisherProvider> named = providers.get(name);
        if (named == null) {
            throw new IllegalArgumentException("unknown publisher '" + name + "'; publishers on the class path: "
                    + String.join(", ", providers.keySet()));
        }
        if (named.size() > 1) {
            throw new IllegalArgumentException("more than one publisher is named '" + name + "' on the class path ("
                    + String.join(", ", named.stream().map(p -> p.getClass().getName()).toList())
                    + "); remove all but one");
        }
        return named.get(0).create(settings);
    }

    /** The names of the publishers on the class path, in alphabetical order. */
    public static List<String> names() {
        return List.copyOf(providers().keySet());
    }

    private static Map<String, List<PublisherProvider>> providers() {
        Map<String, List<PublisherProvider>> byName = new TreeMap<>();
        try {
            for (PublisherProvider provider : ServiceLoader.load(PublisherProvider.class)) {
                byName.computeIfAbsent(provider.name(), ignored -> new ArrayList<>(1)).add(provider);
            }
        } catch (ServiceConfigurationError e) {
            throw new IllegalStateException("a publisher provider on the class path could not be loaded: "
                    + e.getMessage(), e);
        }
        return byName;
    }
}
