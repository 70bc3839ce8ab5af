package dev.idempotency.console;

import static dev.idempotency.console.ConsoleRequests.csrfToken;
import static dev.idempotency.console.ConsoleRequests.get;
import static dev.idempotency.console.ConsoleRequests.post;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.testing.DeadLetterRows;
import dev.idempotency.testing.MigratedSchema;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What the console refuses and escapes, whatever host serves it: requests handed to it directly. */
@Timeout(60)
class OutboxConsoleTest {
    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).build();

    private static OutboxConsole console(boolean readOnly) {
        return OutboxConsole.builder(db.dataSource()).schema(db.name()).readOnly(readOnly).build();
    }

    @Test
    void aReadOnlyConsoleShowsNoRequeueAndRefusesARequeuePostEvenWithTheToken() {
        DeadLetterRows.insert(db.dataSource(), 101, "orders", "{\"card\": \"4111\"}");
        OutboxConsole console = console(true);

        String list = get(console, "/dead-letters").text();
        String detail = get(console, "/dead-letters/101").text();
        String token = csrfToken(detail);
        OutboxConsole.Response requeue = post(console, "/dead-letters/101/requeue", Map.of("csrf", token));
        OutboxConsole.Response requeueAll = post(console, "/dead-letters/requeue-all", Map.of("csrf", token, "confirm", "yes"));

        assertTrue(list.contains("/console/dead-letters/101"), list);
        assertFalse(list.contains("requeue-all"), list);
        assertFalse(detail.contains("/requeue"), detail);
        assertEquals(403, requeue.status());
        assertEquals(403, requeueAll.status());
        assertEquals("dead", DeadLetterRows.status(db.dataSource(), 101));
    }

    @Test
    void aReadOnlyConsoleHidesResolvingSelectingAndDeletingAndRefusesTheirPostsEvenWithTheToken() {
        DeadLetterRows.insert(db.dataSource(), 105, "orders", "{}");
        KeyRows.insertUnknownOutcome(db.dataSource(), "s1", "pay-ro");
        OutboxConsole console = console(true);

        String list = get(console, "/dead-letters").text();
        String detail = get(console, "/dead-letters/105").text();
        String key = get(console, "/keys", Map.of("tenant", "s1", "key", "pay-ro")).text();
        String token = csrfToken(detail);
        OutboxConsole.Response delete = post(console, "/dead-letters/selected",
                Map.of("csrf", token, "action", "delete", "select.105", "yes", "confirm", "yes"));
        OutboxConsole.Response resolve = post(console, "/keys/resolve", Map.of("csrf", token, "tenant", "s1", "key", "pay-ro",
                "outcome", "completed", "result", "\"ch_1\"", "note", "found"));

        assertFalse(list.contains("type=\"checkbox\""), list);
        assertFalse(list.contains("delete-selected"), list);
        assertFalse(detail.contains("id=\"delete\""), detail);
        assertTrue(key.contains("unknown outcome (lease_expired)"), key);
        assertFalse(key.contains("/keys/resolve"), key);
        assertEquals(403, delete.status());
        assertEquals(403, resolve.status());
        assertEquals("dead", DeadLetterRows.status(db.dataSource(), 105));
        assertEquals("failed", KeyRows.row(db.dataSource(), "s1", "pay-ro").get("status"));
    }

    @Test
    void aDeleteOrAResolutionWithoutTheConsolesCsrfTokenIsRefusedAndChangesNothing() {
        DeadLetterRows.insert(db.dataSource(), 106, "orders", "{}");
        KeyRows.insertUnknownOutcome(db.dataSource(), "s1", "pay-csrf");
        OutboxConsole console = console(false);

        OutboxConsole.Response delete = post(console, "/dead-letters/selected",
                Map.of("action", "delete", "select.106", "yes", "confirm", "yes"));
        OutboxConsole.Response resolve = post(console, "/keys/resolve", Map.of("csrf", "guessed", "tenant", "s1",
                "key", "pay-csrf", "outcome", "failed", "code", "card_declined", "message", "no", "note", "found"));

        assertEquals(403, delete.status());
        assertEquals(403, resolve.status());
        assertEquals("dead", DeadLetterRows.status(db.dataSource(), 106));
        assertEquals("lease_expired", KeyRows.row(db.dataSource(), "s1", "pay-csrf").get("code"));
    }

    @Test
    void aPostWithoutTheConsolesCsrfTokenIsRefusedAndRequeuesNothing() {
        DeadLetterRows.insert(db.dataSource(), 102, "orders", "{}");
        OutboxConsole console = console(false);
        String foreignToken = csrfToken(get(console(false), "/dead-letters/102").text());

        OutboxConsole.Response missing = post(console, "/dead-letters/102/requeue", Map.of());
        OutboxConsole.Response foreign = post(console, "/dead-letters/102/requeue", Map.of("csrf", foreignToken));

        assertEquals(403, missing.status());
        assertEquals(403, foreign.status(), "another console's token");
        assertEquals("dead", DeadLetterRows.status(db.dataSource(), 102));
    }

    @Test
    void whatTheDatabaseHoldsIsEscapedAndThePayloadIsShownOnlyWhenRevealed() {
        DeadLetterRows.insert(db.dataSource(), 103, "<script>alert(1)</script>", "{\"secret\": \"<i>s-103</i>\"}");
        OutboxConsole console = console(false);

        String list = get(console, "/dead-letters").text();
        String detail = get(console, "/dead-letters/103").text();
        String revealed = post(console, "/dead-letters/103/payload", Map.of("csrf", csrfToken(detail))).text();

        assertTrue(list.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), list);
        assertFalse(list.contains("<script>"), list);
        assertFalse(list.contains("<b>bold</b>"), "the last error is escaped too");
        assertFalse(detail.contains("s-103"), detail);
        assertTrue(revealed.contains("&lt;i&gt;s-103&lt;/i&gt;"), revealed);
    }

    @Test
    void linksFormsAndRedirectsStayUnderTheBasePathAndFormsCarryTheHostsCsrfToken() {
        DeadLetterRows.insert(db.dataSource(), 104, "orders", "{}");
        OutboxConsole console = OutboxConsole.builder(db.dataSource()).schema(db.name()).basePath("/app/idempotency/console")
                .build();

        String detail = console.handle(new OutboxConsole.Request("GET", "/dead-letters/104", Map.of(), "ops",
                new OutboxConsole.HostCsrf("_csrf", "host-token-\"1"))).text();
        OutboxConsole.Response requeue = post(console, "/dead-letters/104/requeue", Map.of("csrf", csrfToken(detail)));

        assertTrue(detail.contains("href=\"/app/idempotency/console/console.css\""), detail);
        assertTrue(detail.contains("action=\"/app/idempotency/console/dead-letters/104/requeue\""), detail);
        assertTrue(detail.contains("<input type=\"hidden\" name=\"_csrf\" value=\"host-token-&quot;1\">"), detail);
        assertFalse(detail.contains("\"/console/"), "no link outside the base path");
        assertEquals(303, requeue.status());
        assertEquals("/app/idempotency/console/dead-letters?requeued=104", requeue.headers().get("Location"));
        assertEquals("pending", DeadLetterRows.status(db.dataSource(), 104));
    }

    @Test
    void everyAnswerForbidsCachingFramingAndForeignContent() {
        OutboxConsole.Response overview = get(console(false), "/");
        OutboxConsole.Response missing = get(console(false), "/nothing-here");

        assertEquals(200, overview.status());
        assertEquals(404, missing.status());
        for (OutboxConsole.Response response : new OutboxConsole.Response[] {overview, missing}) {
            assertEquals("no-store", response.headers().get("Cache-Control"));
            assertEquals("DENY", response.headers().get("X-Frame-Options"));
            assertTrue(response.headers().get("Content-Security-Policy").startsWith("default-src 'none'"));
        }
    }

    @Test
    void theBuilderRefusesABasePathWithATrailingSlashOrNoneAndKeysInAnotherSchema() {
        assertThrows(IllegalArgumentException.class, () -> OutboxConsole.builder(db.dataSource()).basePath("/console/").build());
        assertThrows(IllegalArgumentException.class, () -> OutboxConsole.builder(db.dataSource()).basePath("console").build());
        assertThrows(IllegalArgumentException.class, () -> OutboxConsole.builder(db.dataSource()).schema(db.name())
                .idempotencyConfig(IdempotencyConfig.builder().schema("elsewhere").build()).build(), "keys in another schema");
    }

    @Test
    void theChartsDataCountsTheLastMinutesEventsAndItsScriptsComeFromTheJarUnderAStrictCsp() {
        db.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                + " SELECT 't1', 'rates', 'k' || n, '{}' FROM generate_series(1, 120) n");
        OutboxConsole console = console(false);

        String overview = get(console, "/").text();
        OutboxConsole.Response rates = get(console, "/overview/rates.json");
        OutboxConsole.Response uplot = get(console, "/assets/uplot.js");
        OutboxConsole.Response charts = get(console, "/assets/console-charts.js");

        assertTrue(overview.contains("<script src=\"/console/assets/uplot.js\"></script>"), overview);
        assertTrue(overview.contains("data-source=\"/console/overview/rates.json\""), overview);
        assertEquals("application/json", rates.headers().get("Content-Type"));
        assertTrue(rates.text().matches("\\{\"time\":\\[(\\d+,){14}\\d+],\"written\":\\[.*2(\\.0+)?]?.*"), rates.text());
        assertEquals(200, uplot.status());
        assertTrue(uplot.text().contains("uPlot"), "uPlot's own script");
        assertEquals(200, charts.status());
        assertTrue(overview.indexOf("<script>") < 0, "no inline script");
        assertTrue(get(console, "/").headers().get("Content-Security-Policy").contains("script-src 'self'"));
    }

    @Test
    void aStalledOutboxWithFailedAttemptsShowsTheOutageBannerWithTheLatestErrorEscaped() {
        db.execute("INSERT INTO outbox_retries (event_id, message_id, tenant_id, topic, partition_key, ordering_hash, payload,"
                + " headers, created_at, status, attempts, last_error) VALUES (901, gen_random_uuid(), 't1', 'orders', 'k',"
                + " 1, '{}', '{}', now() - interval '10 minutes', 'pending', 4, 'connection refused <broker>')");
        OutboxConsole stalled = OutboxConsole.builder(db.dataSource()).schema(db.name())
                .stall(() -> Duration.ofMinutes(7), Duration.ofMinutes(5)).build();
        OutboxConsole moving = OutboxConsole.builder(db.dataSource()).schema(db.name())
                .stall(() -> Duration.ZERO, Duration.ofMinutes(5)).build();

        String outage = get(stalled, "/").text();
        String retrying = get(moving, "/").text();

        assertTrue(outage.contains("id=\"outage\""), outage);
        assertTrue(outage.contains("no event has gone out for 7m 0s"), outage);
        assertTrue(outage.contains("connection refused &lt;broker&gt;"), outage);
        assertFalse(retrying.contains("id=\"outage\""), retrying);
        assertTrue(retrying.contains("id=\"retrying\""), retrying);
        db.execute("DELETE FROM outbox_retries WHERE event_id = 901");
    }
}
