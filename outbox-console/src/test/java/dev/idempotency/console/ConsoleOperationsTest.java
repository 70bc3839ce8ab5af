package dev.idempotency.console;

import static dev.idempotency.console.ConsoleRequests.csrfToken;
import static dev.idempotency.console.ConsoleRequests.get;
import static dev.idempotency.console.ConsoleRequests.post;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.DeadLetterRows;
import dev.idempotency.testing.MigratedSchema;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.LoggerFactory;

/** The operator's actions on dead letters and unknown outcomes, requests handed to the console directly. */
@Timeout(60)
class ConsoleOperationsTest {
    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).build();

    private final ListAppender<ILoggingEvent> actionLog = new ListAppender<>();
    private final Logger actionLogger = (Logger) LoggerFactory.getLogger(ConsoleActions.class);
    private final OutboxConsole console = OutboxConsole.builder(db.dataSource()).schema(db.name()).build();

    @BeforeEach
    void captureTheActionLog() {
        actionLog.start();
        actionLogger.addAppender(actionLog);
    }

    @AfterEach
    void stopCapturing() {
        actionLogger.detachAppender(actionLog);
    }

    private List<String> logged() {
        return actionLog.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
    }

    @Test
    void deletingSelectedDeadLettersAsksFirstThenDeletesOnlyThoseAndLogsTheirIds() {
        DeadLetterRows.insert(db.dataSource(), 501, "orders", "{}");
        DeadLetterRows.insert(db.dataSource(), 502, "orders", "{}");
        DeadLetterRows.insert(db.dataSource(), 503, "orders", "{}");
        String token = csrfToken(get(console, "/dead-letters").text());
        Map<String, String> form = Map.of("csrf", token, "action", "delete", "select.501", "yes", "select.503", "yes");

        OutboxConsole.Response confirmation = post(console, "/dead-letters/selected", form);
        assertEquals(200, confirmation.status());
        assertTrue(confirmation.text().contains("<span id=\"confirm-ids\">501, 503</span>"), confirmation.text());
        assertEquals("dead", DeadLetterRows.status(db.dataSource(), 501), "nothing deleted before the confirmation");

        Map<String, String> confirmed = new java.util.HashMap<>(form);
        confirmed.put("confirm", "yes");
        OutboxConsole.Response deleted = post(console, "/dead-letters/selected", confirmed);

        assertEquals(303, deleted.status());
        assertEquals("/console/dead-letters?deleted=2", deleted.headers().get("Location"));
        assertNull(DeadLetterRows.status(db.dataSource(), 501));
        assertEquals("dead", DeadLetterRows.status(db.dataSource(), 502));
        assertNull(DeadLetterRows.status(db.dataSource(), 503));
        assertTrue(logged().contains("console: ops deleted dead letters: 2 of 2 deleted, ids [501, 503]"), logged().toString());
        assertTrue(get(console, "/dead-letters", Map.of("deleted", "2")).text()
                .contains("<p class=\"notice\" id=\"notice\">Deleted 2 dead letters for good.</p>"));
    }

    @Test
    void requeueAllMatchingPutsBackOnlyTheDeadLettersTheFilterKeeps() {
        DeadLetterRows.insertRetry(db.dataSource(), 601, "m1", "payments", "a", "dead", "1 minute", "now()", "HTTP 400: bad IBAN");
        DeadLetterRows.insertRetry(db.dataSource(), 602, "m1", "payments", "b", "dead", "1 minute", "now()", "HTTP 400: expired card");
        String page = get(console, "/dead-letters/requeue-all", Map.of("tenant", "m1", "error", "iban")).text();
        assertTrue(page.contains("the 1 dead letters that match tenant m1, error containing &quot;iban&quot;"), page);

        OutboxConsole.Response requeued = post(console, "/dead-letters/requeue-all",
                Map.of("csrf", csrfToken(page), "confirm", "yes", "tenant", "m1", "error", "iban"));

        assertEquals("/console/dead-letters?requeuedAll=1", requeued.headers().get("Location"));
        assertEquals("pending", DeadLetterRows.status(db.dataSource(), 601));
        assertEquals("dead", DeadLetterRows.status(db.dataSource(), 602));
        assertTrue(logged().contains("console: ops requeued all dead letters matching tenant=m1&error=iban: 1 requeued, ids [601]"),
                logged().toString());
    }

    @Test
    void resolvingAnUnknownOutcomeAsSucceededStoresTheResultAndLogsTheNoteButNeverTheResult() {
        KeyRows.insertUnknownOutcome(db.dataSource(), "r1", "pay-1");
        String page = get(console, "/keys", Map.of("tenant", "r1", "key", "pay-1")).text();
        assertTrue(page.contains("unknown outcome (lease_expired): waiting for an operator"), page);
        Map<String, String> form = Map.of("csrf", csrfToken(page), "tenant", "r1", "key", "pay-1", "outcome", "completed",
                "result", "{\"chargeId\": \"ch_SECRET_9\", \"cents\": 12.50}", "note", "charged at the provider\nsee ticket 42");

        OutboxConsole.Response resolved = post(console, "/keys/resolve", form);
        OutboxConsole.Response again = post(console, "/keys/resolve", form);

        assertEquals(303, resolved.status());
        assertEquals("/console/keys?tenant=r1&key=pay-1&resolved=completed", resolved.headers().get("Location"));
        assertEquals("/console/keys?tenant=r1&key=pay-1&resolved=none", again.headers().get("Location"));
        Map<String, Object> row = KeyRows.row(db.dataSource(), "r1", "pay-1");
        assertEquals("completed", row.get("status"));
        assertEquals("{\"cents\": 12.50, \"chargeId\": \"ch_SECRET_9\"}", row.get("result"));
        assertTrue(get(console, "/keys", Map.of("tenant", "r1", "key", "pay-1", "resolved", "completed")).text()
                .contains("Resolved as succeeded: replays return the result given."));
        assertTrue(logged().contains("console: ops resolved the unknown outcome of key pay-1 of tenant r1 as succeeded;"
                + " note: charged at the provider see ticket 42"), logged().toString());
        assertFalse(logged().toString().contains("ch_SECRET_9"), "no stored result in the log");
    }

    @Test
    void resolvingAnUnknownOutcomeAsFailedStoresTheFailureReplaysThrow() {
        KeyRows.insertUnknownOutcome(db.dataSource(), "r1", "pay-2");
        String token = csrfToken(get(console, "/keys", Map.of("tenant", "r1", "key", "pay-2")).text());

        OutboxConsole.Response resolved = post(console, "/keys/resolve", Map.of("csrf", token, "tenant", "r1", "key", "pay-2",
                "outcome", "failed", "code", "card_declined", "message", "Declined by the issuer", "note", "provider says declined"));

        assertEquals(303, resolved.status());
        Map<String, Object> row = KeyRows.row(db.dataSource(), "r1", "pay-2");
        assertEquals("failed", row.get("status"));
        assertEquals("card_declined", row.get("code"));
        assertEquals("Declined by the issuer", row.get("message"));
        assertFalse(get(console, "/unknown-outcomes").text().contains("pay-2"), "no longer waiting for an operator");
    }

    @Test
    void aResolutionWithoutANoteOrWithAResultThatIsNotJsonIsRefusedAndChangesNothing() {
        KeyRows.insertUnknownOutcome(db.dataSource(), "r1", "pay-3");
        String token = csrfToken(get(console, "/keys", Map.of("tenant", "r1", "key", "pay-3")).text());

        OutboxConsole.Response noNote = post(console, "/keys/resolve", Map.of("csrf", token, "tenant", "r1", "key", "pay-3",
                "outcome", "completed", "result", "\"ch_1\"", "note", " "));
        OutboxConsole.Response notJson = post(console, "/keys/resolve", Map.of("csrf", token, "tenant", "r1", "key", "pay-3",
                "outcome", "completed", "result", "ch_1", "note", "found it"));
        OutboxConsole.Response jsonNull = post(console, "/keys/resolve", Map.of("csrf", token, "tenant", "r1", "key", "pay-3",
                "outcome", "completed", "result", "null", "note", "found it"));

        assertEquals(400, noNote.status());
        assertEquals(400, notJson.status());
        assertTrue(notJson.text().startsWith("refused: the result is not JSON"), notJson.text());
        assertEquals(400, jsonNull.status());
        assertEquals("failed", KeyRows.row(db.dataSource(), "r1", "pay-3").get("status"));
        assertTrue(get(console, "/unknown-outcomes").text().contains("pay-3"));
    }
}
