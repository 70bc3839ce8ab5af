package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/**
 * What embedding the relay library brings into an application: no logging configuration, no
 * command-line framework, no Prometheus registry (those are outbox-relay-app's). The test classpath
 * is the library's compile and runtime classpath plus test-only jars, none of which carry these.
 */
class LibraryDependenciesTest {
    @Test
    void theLibraryShipsNoLogbackXmlNoPicocliAndNoPrometheusRegistry() {
        assertNull(getClass().getClassLoader().getResource("logback.xml"),
                "a library must not configure its user's logging");
        assertThrows(ClassNotFoundException.class, () -> Class.forName("picocli.CommandLine"));
        assertThrows(ClassNotFoundException.class,
                () -> Class.forName("io.micrometer.prometheusmetrics.PrometheusMeterRegistry"));
    }
}
