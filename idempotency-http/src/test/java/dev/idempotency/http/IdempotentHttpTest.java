package dev.idempotency.http;

import static dev.idempotency.http.HttpFixture.createPayment;
import static dev.idempotency.http.HttpFixture.newKey;
import static dev.idempotency.http.HttpFixture.post;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.zaxxer.hikari.HikariConfig;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.jdbc.PostgresTransaction;
import dev.idempotency.testing.Await;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Every row of the DESIGN's HTTP table, against the real PostgreSQL and the real executor. */
@Timeout(60)
class IdempotentHttpTest {
    private static final String TENANT = "tenant-a";
    private static final String BASE = IdempotentHttpConfig.DEFAULT_PROBLEM_TYPE_BASE;

    @RegisterExtension
    static final HttpFixture db = new HttpFixture(6);
    private static final ExecutorService threads = Executors.newFixedThreadPool(4);

    private final AtomicInteger runs = new AtomicInteger();
    private final IdempotentHttp<PostgresTransaction> http = db.http(Duration.ofSeconds(10), IdempotentHttpConfig.defaults());

    @AfterAll
    static void stopThreads() {
        threads.shutdownNow();
    }

    private static JsonNode problemBody(HttpResult result) throws Exception {
        assertEquals("application/problem+json", result.contentType());
        assertTrue(result.headers().contains(new HttpHeader("Cache-Control", "no-store")), result.headers().toString());
        JsonNode body = JsonMapper.builder().build().readTree(result.body());
        assertEquals(result.status(), body.get("status").asInt());
        assertTrue(body.get("title").asText().length() > 0);
        assertTrue(body.get("detail").asText().length() > 0);
        assertEquals(4, body.size(), "type, title, status and detail only: " + body);
        return body;
    }

    private static String header(HttpResult result, String name) {
        return result.headers().stream().filter(h -> h.named(name)).map(HttpHeader::value).findFirst().orElse(null);
    }

    @Test
    void getHeadPutDeleteAndOptionsPassThroughUntouched() {
        for (String method : List.of("GET", "HEAD", "PUT", "DELETE", "OPTIONS")) {
            String key = newKey();
            HttpResult result = http.handle(HttpRequestData.builder(method, "/payments").keyFieldLines(List.of("\"" + key + "\"")).build(),
                    TENANT, tx -> createPayment(tx, runs, 1));
            assertEquals(HttpResult.Kind.PASSED_THROUGH, result.kind(), method);
            assertTrue(result.passedThrough());
            assertEquals(0, db.keyRows(key, TENANT), method);
        }
        assertEquals(0, runs.get(), "the handler is the adapter's to run for a passed-through request");
    }

    @Test
    void aPostWithoutTheHeaderIs400ProblemAndNothingIsRecorded() throws Exception {
        String tenant = "tenant-missing";
        HttpResult result = http.handle(HttpRequestData.builder("POST", "/payments").body("{}".getBytes(StandardCharsets.UTF_8)).build(),
                tenant, tx -> createPayment(tx, runs, 1));
        assertEquals(HttpResult.Kind.PROBLEM, result.kind());
        assertEquals(400, result.status());
        assertEquals(ProblemType.KEY_MISSING, result.problem());
        JsonNode body = problemBody(result);
        assertEquals(BASE + "idempotency-key-missing", body.get("type").asText());
        assertTrue(body.get("detail").asText().contains("Idempotency-Key"));
        assertEquals(0, runs.get());
        assertEquals(0, db.keyRowsOfTenant(tenant));
    }

    @Test
    void aHeaderThatIsNotOneStructuredFieldStringIs400AndNothingIsRecorded() throws Exception {
        String tenant = "tenant-malformed";
        List<List<String>> malformed = List.of(
                List.of("\"a\", \"b\""),             // a list
                List.of("\"a\"", "\"a\""),           // two field lines
                List.of(""),                         // empty
                List.of("\"\""),                     // an empty string
                List.of("\"" + "k".repeat(256) + "\""), // over the length limit
                List.of("\"a\u0007b\""),             // a control character
                List.of("\"a\\nb\""),                // a bad escape
                List.of("two words"),                // a space in an unquoted key
                List.of("a, b"),                     // an unquoted list
                List.of("\"   \""));                 // a blank key (the core's rule)
        for (List<String> lines : malformed) {
            HttpResult result = http.handle(HttpRequestData.builder("POST", "/payments").keyFieldLines(lines).build(),
                    tenant, tx -> createPayment(tx, runs, 1));
            assertEquals(400, result.status(), lines.toString());
            assertEquals(ProblemType.KEY_MALFORMED, result.problem(), lines.toString());
            assertEquals(BASE + "idempotency-key-malformed", problemBody(result).get("type").asText());
        }
        assertEquals(0, runs.get());
        assertEquals(0, db.keyRowsOfTenant(tenant));
    }

    @Test
    void anUnquotedKeyAsStripesClientsSendItIsTheSameKeyAsItsQuotedForm() {
        String key = newKey();
        HttpResult first = http.handle(post(key, "{\"amount\":10}").keyFieldLines(List.of(key)).build(), TENANT,
                tx -> createPayment(tx, runs, 10));
        HttpResult quoted = http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> createPayment(tx, runs, 10));
        assertEquals(201, first.status());
        assertFalse(first.replayed());
        assertTrue(quoted.replayed(), "the quoted form names the key the unquoted one created");
        assertArrayEquals(first.body(), quoted.body());
        assertEquals(1, runs.get());
        assertEquals(1, db.payments(key, TENANT));
    }

    @Test
    void theProblemDetailSaysWhichFormsOfTheKeyAreAccepted() throws Exception {
        String missing = problemBody(http.handle(HttpRequestData.builder("POST", "/payments").build(), TENANT,
                tx -> createPayment(tx, runs, 1))).get("detail").asText();
        String malformed = problemBody(http.handle(post("k", "{}").keyFieldLines(List.of("two words")).build(), TENANT,
                tx -> createPayment(tx, runs, 1))).get("detail").asText();
        for (String detail : List.of(missing, malformed)) {
            assertTrue(detail.contains("Idempotency-Key: 8e03978e-40d5-43e8-bc93-6894a57f9324"), detail);
            assertTrue(detail.contains("Idempotency-Key: \"8e03978e-40d5-43e8-bc93-6894a57f9324\""), detail);
        }
        assertTrue(malformed.contains("contains a space"), malformed);
        assertEquals(0, runs.get());
    }

    @Test
    void strictDraftSyntaxRefusesAnUnquotedKeyAndSaysOnlyTheQuotedFormIsAccepted() throws Exception {
        IdempotentHttp<PostgresTransaction> strict = db.http(Duration.ofSeconds(10),
                IdempotentHttpConfig.builder().keySyntax(KeySyntax.STRICT).build());
        String key = newKey();
        HttpResult unquoted = strict.handle(post(key, "{}").keyFieldLines(List.of(key)).build(), TENANT,
                tx -> createPayment(tx, runs, 1));
        assertEquals(400, unquoted.status());
        assertEquals(ProblemType.KEY_MALFORMED, unquoted.problem());
        String detail = problemBody(unquoted).get("detail").asText();
        assertTrue(detail.contains("quoted Structured Field String (RFC 8941) only"), detail);
        assertFalse(detail.contains("unquoted"), detail);
        assertEquals(201, strict.handle(post(key, "{}").build(), TENANT, tx -> createPayment(tx, runs, 1)).status());
    }

    @Test
    void theFirstRequestRunsTheHandlerInTheKeysTransactionAndStoresOnlyReplaySafeHeaders() throws Exception {
        String key = newKey();
        HttpResult first = http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> createPayment(tx, runs, 10));

        assertEquals(HttpResult.Kind.FIRST_RUN, first.kind());
        assertFalse(first.replayed());
        assertEquals(201, first.status());
        assertEquals("application/json", first.contentType());
        assertEquals("session=first-caller; HttpOnly", header(first, "Set-Cookie"), "the first caller gets its whole response");
        assertEquals("false", header(first, HttpResult.REPLAYED_HEADER));
        assertEquals(1, db.payments(key, TENANT));
        assertEquals(1, runs.get());

        StoredResponse stored = StoredResponse.fromJson(db.storedResult(TENANT, key));
        assertEquals(201, stored.status());
        assertEquals("application/json", stored.contentType());
        assertEquals(List.of(new HttpHeader("Location", header(first, "Location"))), stored.headers(),
                "Set-Cookie and headers off the allow-list are not stored");
        assertArrayEquals(first.body(), stored.body());
    }

    @Test
    void theSameKeyAndRequestAgainGetsTheStoredResponseByteForByteMarkedReplayed() {
        String key = newKey();
        HttpResult first = http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> createPayment(tx, runs, 10));
        HttpResult again = http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> createPayment(tx, runs, 10));

        assertEquals(HttpResult.Kind.REPLAYED, again.kind());
        assertTrue(again.replayed());
        assertEquals(first.status(), again.status());
        assertEquals(first.contentType(), again.contentType());
        assertArrayEquals(first.body(), again.body());
        assertEquals(List.of(new HttpHeader("Location", header(first, "Location")), new HttpHeader("Idempotent-Replayed", "true")),
                again.headers());
        assertEquals(1, runs.get());
        assertEquals(1, db.payments(key, TENANT));
    }

    @Test
    void aConcurrentDuplicateWaitsForTheFirstAndGetsItsResponseByteForByte() throws Exception {
        String key = newKey();
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Future<HttpResult> first = threads.submit(() -> http.handle(post(key, "{\"amount\":5}").build(), TENANT, tx -> {
            HttpResponseData response = createPayment(tx, runs, 5);
            firstInside.countDown();
            release.await();
            return response;
        }));
        assertTrue(firstInside.await(10, TimeUnit.SECONDS));
        Future<HttpResult> duplicate = threads.submit(() -> http.handle(post(key, "{\"amount\":5}").build(), TENANT,
                tx -> createPayment(tx, runs, 5)));
        awaitDuplicateWaiting();
        assertFalse(duplicate.isDone(), "the duplicate waits while the first runs");
        release.countDown();

        HttpResult firstResult = first.get(10, TimeUnit.SECONDS);
        HttpResult duplicateResult = duplicate.get(10, TimeUnit.SECONDS);
        assertEquals(HttpResult.Kind.FIRST_RUN, firstResult.kind());
        assertEquals(HttpResult.Kind.REPLAYED, duplicateResult.kind());
        assertEquals(201, duplicateResult.status());
        assertArrayEquals(firstResult.body(), duplicateResult.body());
        assertEquals("true", header(duplicateResult, "Idempotent-Replayed"));
        assertEquals(1, runs.get());
        assertEquals(1, db.payments(key, TENANT));
    }

    @Test
    void aConcurrentDuplicatePastTheWaitBudgetIs409WithRetryAfter() throws Exception {
        IdempotentHttp<PostgresTransaction> impatient = db.http(Duration.ofMillis(200),
                IdempotentHttpConfig.builder().retryAfter(Duration.ofSeconds(2)).build());
        String key = newKey();
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Future<HttpResult> first = threads.submit(() -> impatient.handle(post(key, "{\"amount\":5}").build(), TENANT, tx -> {
            HttpResponseData response = createPayment(tx, runs, 5);
            firstInside.countDown();
            release.await();
            return response;
        }));
        assertTrue(firstInside.await(10, TimeUnit.SECONDS));
        try {
            HttpResult duplicate = impatient.handle(post(key, "{\"amount\":5}").build(), TENANT, tx -> createPayment(tx, runs, 5));
            assertEquals(409, duplicate.status());
            assertEquals(ProblemType.KEY_IN_PROGRESS, duplicate.problem());
            assertEquals("2", header(duplicate, "Retry-After"));
            assertEquals(BASE + "idempotency-key-in-progress", problemBody(duplicate).get("type").asText());
        } finally {
            release.countDown();
        }
        HttpResult firstResult = first.get(10, TimeUnit.SECONDS);
        HttpResult later = impatient.handle(post(key, "{\"amount\":5}").build(), TENANT, tx -> createPayment(tx, runs, 5));
        assertEquals(HttpResult.Kind.REPLAYED, later.kind(), "the retry after Retry-After gets the first response");
        assertArrayEquals(firstResult.body(), later.body());
        assertEquals(1, runs.get());
    }

    @Test
    void theSameKeyWithAnotherMethodPathQueryContentTypeOrBodyIs422AndTheHandlerDoesNotRun() throws Exception {
        String key = newKey();
        HttpResult first = http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> createPayment(tx, runs, 10));
        String quoted = "\"" + key + "\"";
        List<HttpRequestData> others = List.of(
                post(key, "{\"amount\":11}").build(),
                post(key, "{\"amount\":10}").query("dry-run=1").build(),
                post(key, "{\"amount\":10}").contentType("text/plain").build(),
                HttpRequestData.builder("PATCH", "/payments").contentType("application/json").keyFieldLines(List.of(quoted))
                        .body("{\"amount\":10}".getBytes(StandardCharsets.UTF_8)).build(),
                HttpRequestData.builder("POST", "/refunds").contentType("application/json").keyFieldLines(List.of(quoted))
                        .body("{\"amount\":10}".getBytes(StandardCharsets.UTF_8)).build());
        for (HttpRequestData other : others) {
            HttpResult result = http.handle(other, TENANT, tx -> createPayment(tx, runs, 99));
            assertEquals(422, result.status());
            assertEquals(ProblemType.KEY_REUSED, result.problem());
            JsonNode body = problemBody(result);
            assertEquals(BASE + "idempotency-key-reused", body.get("type").asText());
            assertFalse(new String(result.body(), StandardCharsets.UTF_8).contains(header(first, "Location")),
                    "a problem never echoes the stored response");
        }
        assertEquals(1, runs.get());
        assertEquals(1, db.payments(key, TENANT));
    }

    @Test
    void aHandlerAnswering5xxRollsEverythingBackPassesTheResponseThroughAndTheRetryRunsAgain() {
        String key = newKey();
        HttpResult failed = http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> {
            createPayment(tx, runs, 10);
            return HttpResponseData.builder(502).contentType("text/plain").header("Retry-After", "3")
                    .body("upstream down".getBytes(StandardCharsets.UTF_8)).build();
        });
        assertEquals(HttpResult.Kind.NOT_STORED, failed.kind());
        assertEquals(502, failed.status());
        assertEquals("upstream down", new String(failed.body(), StandardCharsets.UTF_8));
        assertEquals("3", header(failed, "Retry-After"));
        assertEquals(0, db.payments(key, TENANT), "the handler's write rolled back");
        assertEquals(0, db.keyRows(key, TENANT), "no key: a retry runs again");

        HttpResult retry = http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> createPayment(tx, runs, 10));
        assertEquals(HttpResult.Kind.FIRST_RUN, retry.kind());
        assertEquals(201, retry.status());
        assertEquals(2, runs.get());
        assertEquals(1, db.payments(key, TENANT));
    }

    @Test
    void aHandlerThatThrowsRollsEverythingBackTheExceptionReachesTheAdapterAndTheRetryRunsAgain() {
        String key = newKey();
        IllegalStateException boom = new IllegalStateException("controller failed after writing");
        IllegalStateException thrown = assertThrows(IllegalStateException.class,
                () -> http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> {
                    createPayment(tx, runs, 10);
                    throw boom;
                }));
        assertSame(boom, thrown);
        assertEquals(0, db.payments(key, TENANT));
        assertEquals(0, db.keyRows(key, TENANT));

        HttpResult retry = http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> createPayment(tx, runs, 10));
        assertEquals(HttpResult.Kind.FIRST_RUN, retry.kind());
        assertEquals(1, db.payments(key, TENANT));
    }

    @Test
    void aCheckedExceptionFromTheHandlerIsRethrownAsIs() {
        String key = newKey();
        java.io.IOException io = new java.io.IOException("client went away");
        java.io.IOException thrown = assertThrows(java.io.IOException.class,
                () -> http.<java.io.IOException>handle(post(key, "{}").build(), TENANT, tx -> {
                    throw io;
                }));
        assertSame(io, thrown);
        assertEquals(0, db.keyRows(key, TENANT));
    }

    @Test
    void anUndeclared4xxIsPassedThroughRolledBackAndNotStored() {
        String key = newKey();
        HttpResult rejected = http.handle(post(key, "{}").build(), TENANT, tx -> {
            createPayment(tx, runs, 1);
            return HttpResponseData.builder(400).contentType("application/json")
                    .body("{\"error\":\"amount\"}".getBytes(StandardCharsets.UTF_8)).build();
        });
        assertEquals(HttpResult.Kind.NOT_STORED, rejected.kind());
        assertEquals(400, rejected.status());
        assertEquals(0, db.payments(key, TENANT));
        assertEquals(0, db.keyRows(key, TENANT));
    }

    @Test
    void aDeclaredBusinessFailureIsStoredWithItsWritesAndReplayed() {
        IdempotentHttp<PostgresTransaction> declaring = db.http(Duration.ofSeconds(10),
                IdempotentHttpConfig.builder().storedClientErrors(402).build());
        String key = newKey();
        HttpResult declined = declaring.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> {
            createPayment(tx, runs, 10); // e.g. the declined attempt, recorded by the application
            return HttpResponseData.builder(402).contentType("application/problem+json")
                    .body("{\"title\":\"card declined\"}".getBytes(StandardCharsets.UTF_8)).build();
        });
        assertEquals(HttpResult.Kind.FIRST_RUN, declined.kind());
        assertEquals(402, declined.status());
        assertEquals(1, db.payments(key, TENANT));

        HttpResult again = declaring.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> createPayment(tx, runs, 10));
        assertEquals(HttpResult.Kind.REPLAYED, again.kind());
        assertEquals(402, again.status());
        assertEquals("application/problem+json", again.contentType());
        assertArrayEquals(declined.body(), again.body());
        assertEquals(1, runs.get());
    }

    @Test
    void aBodyOverTheSizeLimitIs500ProblemAndNothingIsStoredButOneAtTheLimitIs() throws Exception {
        IdempotentHttp<PostgresTransaction> small = db.http(Duration.ofSeconds(10),
                IdempotentHttpConfig.builder().maxStoredBodyBytes(10).build());
        String key = newKey();
        HttpResult tooLarge = small.handle(post(key, "{}").build(), TENANT, tx -> {
            createPayment(tx, runs, 1);
            return HttpResponseData.builder(200).body(new byte[11]).build();
        });
        assertEquals(500, tooLarge.status());
        assertEquals(ProblemType.RESPONSE_NOT_STORABLE, tooLarge.problem());
        assertEquals(BASE + "response-not-storable", problemBody(tooLarge).get("type").asText());
        assertEquals(0, db.payments(key, TENANT));
        assertEquals(0, db.keyRows(key, TENANT));

        String other = newKey();
        HttpResult atLimit = small.handle(post(other, "{}").build(), TENANT,
                tx -> HttpResponseData.builder(200).body(new byte[10]).build());
        assertEquals(HttpResult.Kind.FIRST_RUN, atLimit.kind());
        assertEquals(1, db.keyRows(other, TENANT));
    }

    @Test
    void keysAreScopedByTenantAndAnotherTenantNeverGetsTheStoredResponse() {
        String key = newKey();
        HttpResult a = http.handle(post(key, "{\"amount\":10}").build(), TENANT, tx -> createPayment(tx, runs, 10));
        HttpResult b = http.handle(post(key, "{\"amount\":10}").build(), "tenant-b", tx -> createPayment(tx, runs, 10));
        assertEquals(HttpResult.Kind.FIRST_RUN, b.kind());
        assertFalse(java.util.Arrays.equals(a.body(), b.body()));
        HttpResult bWithOtherBody = http.handle(post(key, "{\"amount\":99}").build(), "tenant-c", tx -> createPayment(tx, runs, 99));
        assertEquals(HttpResult.Kind.FIRST_RUN, bWithOtherBody.kind(), "another tenant's fingerprint does not apply");
        assertEquals(3, runs.get());
    }

    @Test
    void aMalformedTenantIsTheApplicationsErrorNotA400() {
        InvalidIdempotencyKeyException refused = assertThrows(InvalidIdempotencyKeyException.class,
                () -> http.handle(post(newKey(), "{}").build(), " ", tx -> createPayment(tx, runs, 1)));
        assertEquals("tenant", refused.field());
        assertEquals(0, runs.get());
    }

    @Test
    void aTransientDatabaseFailureIs503WithRetryAfter() throws Exception {
        HikariConfig settings = new HikariConfig();
        try (HikariDataSource template = db.schema.newPool(1)) {
            template.copyStateTo(settings); // the schema's URL and search path
        }
        settings.setPoolName("starved-" + System.nanoTime());
        settings.setMaximumPoolSize(1);
        settings.setConnectionTimeout(250);
        try (HikariDataSource pool = new HikariDataSource(settings)) {
            IdempotentHttp<PostgresTransaction> starved = IdempotentHttp.builder(db.executor(pool, Duration.ofSeconds(1)))
                    .config(IdempotentHttpConfig.defaults()).build();
            String key = newKey();
            try (Connection held = pool.getConnection()) { // the pool's only connection: the executor times out
                assertTrue(held.isValid(1));
                HttpResult result = starved.handle(post(key, "{}").build(), TENANT, tx -> createPayment(tx, runs, 1));
                assertEquals(503, result.status());
                assertEquals(ProblemType.TEMPORARILY_UNAVAILABLE, result.problem());
                assertEquals("1", header(result, "Retry-After"));
                assertEquals(BASE + "temporarily-unavailable", problemBody(result).get("type").asText());
            }
            assertEquals(0, runs.get());
            assertEquals(0, db.keyRows(key, TENANT));
        }
    }

    @Test
    void pathRulesDecideWhichPostsNeedAKey() {
        IdempotentHttp<PostgresTransaction> scoped = db.http(Duration.ofSeconds(10),
                IdempotentHttpConfig.builder().pathPrefixes("/payments").build());
        HttpResult elsewhere = scoped.handle(HttpRequestData.builder("POST", "/search").build(), TENANT, tx -> createPayment(tx, runs, 1));
        assertTrue(elsewhere.passedThrough());
        HttpResult keyed = scoped.handle(HttpRequestData.builder("POST", "/payments/1/capture").build(), TENANT,
                tx -> createPayment(tx, runs, 1));
        assertEquals(400, keyed.status());
    }

    @Test
    void anAnnotatedEndpointNeedsAKeyWhateverItsMethod() {
        String key = newKey();
        HttpResult missing = http.handleRequiringKey(HttpRequestData.builder("PUT", "/payments/1").build(), TENANT,
                tx -> createPayment(tx, runs, 1));
        assertEquals(400, missing.status());
        HttpResult first = http.handleRequiringKey(
                HttpRequestData.builder("PUT", "/payments/1").keyFieldLines(List.of("\"" + key + "\"")).build(),
                TENANT, tx -> createPayment(tx, runs, 1));
        assertEquals(HttpResult.Kind.FIRST_RUN, first.kind());
    }

    @Test
    void aDuplicateWaitingOnAFirstThatFailsRunsTheHandlerItself() throws Exception {
        String key = newKey();
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Future<HttpResult> first = threads.submit(() -> http.handle(post(key, "{\"amount\":5}").build(), TENANT, tx -> {
            createPayment(tx, runs, 5);
            firstInside.countDown();
            release.await();
            return HttpResponseData.builder(503).build();
        }));
        assertTrue(firstInside.await(10, TimeUnit.SECONDS));
        Future<HttpResult> duplicate = threads.submit(() -> http.handle(post(key, "{\"amount\":5}").build(), TENANT,
                tx -> createPayment(tx, runs, 5)));
        awaitDuplicateWaiting();
        release.countDown();

        assertEquals(HttpResult.Kind.NOT_STORED, first.get(10, TimeUnit.SECONDS).kind());
        HttpResult second = duplicate.get(10, TimeUnit.SECONDS);
        assertEquals(HttpResult.Kind.FIRST_RUN, second.kind(), "the first rolled back, so the waiting duplicate ran");
        assertEquals(201, second.status());
        assertEquals(2, runs.get());
        assertEquals(1, db.payments(key, TENANT));
    }

    @Test
    void aBusinessFailureThrownByTheHandlerIsStoredAndRethrownOnEveryReplay() {
        String key = newKey();
        BusinessFailure first = assertThrows(BusinessFailure.class, () -> http.handle(post(key, "{}").build(), TENANT, tx -> {
            runs.incrementAndGet();
            throw new BusinessFailure("card_declined", "declined");
        }));
        assertFalse(first.replayed());
        BusinessFailure again = assertThrows(BusinessFailure.class,
                () -> http.handle(post(key, "{}").build(), TENANT, tx -> createPayment(tx, runs, 1)));
        assertTrue(again.replayed());
        assertEquals("card_declined", again.code());
        assertEquals(1, runs.get());
    }

    /** Until a duplicate waits for the first call of its key, in this process (the executor's InFlightCalls). */
    private static void awaitDuplicateWaiting() {
        Await.threadsWaitingIn("dev.idempotency.jdbc.InFlightCalls$Duplicate", "awaitFirst", 1);
    }
}
