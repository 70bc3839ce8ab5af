package dev.idempotency.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The tests' server is the URL given, else a container where Docker works, else an embedded PostgreSQL. */
class TestDatabaseTest {
    private final List<String> started = new ArrayList<>();
    private final TestDatabase container = TestDatabase.at("jdbc:postgresql://container/test", "c", "c");
    private final TestDatabase embedded = TestDatabase.at("jdbc:postgresql://embedded/postgres", null, null);

    @Test
    void aGivenUrlComesFirstAndNothingIsStarted() {
        TestDatabase chosen = TestDatabase.locate("jdbc:postgresql://given/test", () -> true, this::startContainer,
                this::startEmbedded);

        assertEquals("jdbc:postgresql://given/test", chosen.url());
        assertEquals(List.of(), started);
    }

    @Test
    void withNoUrlAContainerIsStartedWhereDockerWorks() {
        assertSame(container, TestDatabase.locate(null, () -> true, this::startContainer, this::startEmbedded));
        assertEquals(List.of("container"), started);
    }

    @Test
    void withNoUrlAndNoDockerAnEmbeddedServerIsStarted() {
        assertSame(embedded, TestDatabase.locate(null, () -> false, this::startContainer, this::startEmbedded));
        assertEquals(List.of("embedded"), started);
    }

    @Test
    @Timeout(120)
    void theEmbeddedServerStartsAndAnswersAsPostgreSql15() throws Exception {
        TestDatabase server = TestDatabase.embedded();

        try (Connection connection = server.connect(); Statement statement = connection.createStatement();
             ResultSet version = statement.executeQuery("SHOW server_version_num")) {
            assertTrue(version.next());
            assertTrue(version.getString(1).startsWith("15"), version.getString(1));
        }
    }

    private TestDatabase startContainer() {
        started.add("container");
        return container;
    }

    private TestDatabase startEmbedded() {
        started.add("embedded");
        return embedded;
    }
}
