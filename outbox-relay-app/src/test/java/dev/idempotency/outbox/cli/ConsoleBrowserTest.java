package dev.idempotency.outbox.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.LeaseLostException;
import dev.idempotency.core.LeaseRequest;
import dev.idempotency.core.Outcome;
import dev.idempotency.db.IdempotencyMigrations;
import dev.idempotency.jdbc.PostgresIdempotentExecutor;
import dev.idempotency.testing.Await;
import dev.idempotency.testing.Brokers;
import dev.idempotency.testing.DeadLetterRows;
import dev.idempotency.testing.MigratedSchema;
import dev.idempotency.testing.MissingTool;
import dev.idempotency.testing.TestDatabase;
import dev.idempotency.testing.TestSchema;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.jdbi.v3.core.Jdbi;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.Dimension;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.StaleElementReferenceException;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;

/**
 * The console in a real browser: Debian's headless chromium driven through its chromedriver, only
 * against 127.0.0.1, with a fresh profile and nothing fetched from the network.
 */
@Timeout(180)
class ConsoleBrowserTest {
    private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");
    private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    private static final Pattern CONSOLE_URL = Pattern.compile("console at (http://\\S+/console)");

    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(IdempotencyMigrations::migrate).build();

    private static Path profile;
    private static WebDriver browser;

    @BeforeAll
    static void startBrowser() throws IOException {
        if (!Files.isExecutable(CHROMEDRIVER)) {
            throw MissingTool.skip("no " + CHROMEDRIVER + " for the console's browser tests: install Debian's chromium and"
                    + " chromium-driver (apt-get install chromium chromium-driver)");
        }
        profile = Files.createTempDirectory("console-chromium");
        ChromeDriverService service = new ChromeDriverService.Builder().usingDriverExecutable(CHROMEDRIVER.toFile())
                .usingAnyFreePort().build();
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage", "--window-size=1280,860",
                "--user-data-dir=" + profile);
        browser = new ChromeDriver(service, options);
    }

    @AfterAll
    static void stopBrowser() throws IOException {
        if (browser != null) {
            browser.quit();
        }
        if (profile != null) {
            try (Stream<Path> files = Files.walk(profile)) {
                files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            }
        }
    }

    @Test
    void aDeadLetterRabbitMqRefusedAppearsWithItsPayloadHiddenAndRequeueingItPublishesItToRabbitMq() throws Exception {
        Brokers.requireRabbitMq();
        String topic = "console-" + UUID.randomUUID();
        try (TestSchema schema = TestDatabase.get().newSchema("console_relay", 2)) {
            // No queue is named like the topic yet: RabbitMQ returns the mandatory message (NO_ROUTE), and with one
            // attempt allowed the relay dead-letters it.
            StringBuffer output = new StringBuffer();
            Process relay = start(schema, output, "run", "--migrate", "--http-port", "0", "--idle-poll-max", "100ms",
                    "--publisher", "rabbitmq", "-s", "host=127.0.0.1", "--max-attempts", "1", "--console",
                    "--instance-id", "relay-console-1");
            try {
                String console = awaitConsoleUrl(relay, output);
                Jdbi jdbi = Jdbi.create(schema.dataSource());
                jdbi.useHandle(h -> h.createUpdate("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                        + " VALUES ('shop-1', :topic, 'order-7', '{\"card\": \"4111-secret-7\"}')").bind("topic", topic).execute());
                Map<String, Object> dead = awaitDeadLetter(jdbi);
                long id = ((Number) dead.get("event_id")).longValue();

                browser.get(console);
                assertEquals("1", browser.findElement(By.cssSelector("#dead-letters .value")).getText());
                assertTrue(browser.findElement(By.id("relays")).getText().contains("relay-console-1"),
                        browser.findElement(By.id("relays")).getText());

                clickAndAwaitNextPage(By.linkText("Dead letters"));
                String row = browser.findElement(By.id("dead-letters")).getText();
                assertTrue(row.contains(topic) && row.contains("unroutable"), row);
                clickAndAwaitNextPage(By.linkText(Long.toString(id)));
                assertTrue(browser.findElement(By.id("dead-letter")).getText().contains(dead.get("message_id").toString()));
                assertFalse(browser.getPageSource().contains("4111-secret-7"), "no payload before the reveal");
                clickAndAwaitNextPage(By.id("reveal-payload"));
                assertTrue(browser.findElement(By.id("payload")).getText().contains("4111-secret-7"));

                try (Connection rabbit = rabbitMq(); Channel channel = rabbit.createChannel()) {
                    channel.queueDeclare(topic, false, false, true, null);
                    clickAndAwaitNextPage(By.id("requeue"));
                    awaitText(By.id("notice"), "Requeued dead letter " + id + ": the relay publishes it again.");

                    GetResponse message = awaitMessage(channel, topic);
                    assertEquals(dead.get("message_id").toString(), message.getProps().getMessageId());
                    assertTrue(new String(message.getBody(), StandardCharsets.UTF_8).contains("4111-secret-7"));
                }
                String log = output.toString();
                assertTrue(log.contains("console: local revealed the payload of dead letter " + id), log);
                assertTrue(log.contains("console: local requeued dead letter " + id), log);
                assertFalse(log.contains("4111-secret-7"), "no payload in the log:\n" + log);
            } finally {
                stop(relay);
            }
        }
    }

    @Test
    void aDeadLetterRabbitMqRefusedIsFoundByItsTopicAndDeletedAfterAConfirmation() throws Exception {
        Brokers.requireRabbitMq();
        String topic = "console-delete-" + UUID.randomUUID();
        try (TestSchema schema = TestDatabase.get().newSchema("console_delete", 2)) {
            StringBuffer output = new StringBuffer();
            Process relay = start(schema, output, "run", "--migrate", "--http-port", "0", "--idle-poll-max", "100ms",
                    "--publisher", "rabbitmq", "-s", "host=127.0.0.1", "--max-attempts", "1", "--console");
            try {
                String console = awaitConsoleUrl(relay, output);
                Jdbi jdbi = Jdbi.create(schema.dataSource());
                // No queue is named like the topic: RabbitMQ returns the message and the relay dead-letters it.
                jdbi.useHandle(h -> h.createUpdate("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                        + " VALUES ('shop-2', :topic, 'order-9', '{\"card\": \"4111-secret-9\"}')").bind("topic", topic).execute());
                long id = ((Number) awaitDeadLetter(jdbi).get("event_id")).longValue();
                DeadLetterRows.insert(schema.dataSource(), id + 1000, "another-topic", "{}");

                browser.get(console + "/dead-letters");
                browser.findElement(By.id("filter-topic")).sendKeys(topic);
                clickAndAwaitNextPage(By.id("apply-filter"));
                awaitText(By.id("dead-letter-count"), "1 dead letter matches.");
                String row = browser.findElement(By.id("dead-letters")).getText();
                assertTrue(row.contains(topic) && row.contains("unroutable") && !row.contains("another-topic"), row);
                browser.findElement(By.id("select-" + id)).click();
                clickAndAwaitNextPage(By.id("delete-selected"));
                awaitText(By.id("confirm-ids"), Long.toString(id));
                assertEquals("dead", DeadLetterRows.status(schema.dataSource(), id), "nothing deleted before the confirmation");
                clickAndAwaitNextPage(By.id("confirm-selected"));

                awaitText(By.id("notice"), "Deleted 1 dead letters for good.");
                assertNull(DeadLetterRows.status(schema.dataSource(), id));
                assertEquals("dead", DeadLetterRows.status(schema.dataSource(), id + 1000), "the other dead letter stays");
                String log = output.toString();
                assertTrue(log.contains("console: local deleted dead letters: 1 of 1 deleted, ids [" + id + "]"), log);
                assertFalse(log.contains("4111-secret-9"), "no payload in the log:\n" + log);
            } finally {
                stop(relay);
            }
        }
    }

    @Test
    void anUnknownOutcomeLeftByALeaseThatRanOutIsResolvedInTheBrowserAndItsKeyThenReplaysTheResult() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("console_keys", 2)) {
            StringBuffer output = new StringBuffer();
            // The relay's own sweeper records the unknown outcome, every 200 ms here.
            Process relay = start(schema, output, "run", "--migrate", "--http-port", "0", "--sweep-interval", "200ms",
                    "--console");
            try {
                String console = awaitConsoleUrl(relay, output);
                PostgresIdempotentExecutor executor = PostgresIdempotentExecutor.builder(schema.dataSource())
                        .config(IdempotencyConfig.builder().schema(schema.name()).build()).build();
                Jdbi jdbi = Jdbi.create(schema.dataSource());
                String key = "pay-" + UUID.randomUUID();
                LeaseRequest<String> request = LeaseRequest.builder(key, "shop-1").lease(Duration.ofMillis(300))
                        .resultType(String.class).build();
                // The external step overruns its lease: the completion finds it lost, and whether the charge went
                // through is unknown.
                assertThrows(LeaseLostException.class, () -> executor.runWithLease(request, lease -> {
                    Await.until("the lease on " + key + " ran out", () -> jdbi.withHandle(h -> h.createQuery(
                            "SELECT lease_expires_at <= now() FROM idempotency_keys WHERE idempotency_key = :key")
                            .bind("key", key).mapTo(Boolean.class).one()));
                    return "ch_unconfirmed";
                }, (tx, charge) -> charge));
                Await.until("the sweeper recorded " + key + " as an unknown outcome", () -> jdbi.withHandle(h -> h.createQuery(
                        "SELECT failure ->> 'code' = 'lease_expired' FROM idempotency_keys WHERE idempotency_key = :key")
                        .bind("key", key).mapTo(Boolean.class).findOne().orElse(false)));

                browser.get(console + "/unknown-outcomes");
                clickAndAwaitNextPage(By.linkText(key));
                awaitText(By.id("key-state"), "unknown outcome (lease_expired): waiting for an operator");
                browser.findElement(By.id("resolve-result")).sendKeys("\"ch_found_at_provider\"");
                browser.findElement(By.id("resolve-completed-note")).sendKeys("charge seen in the provider's dashboard");
                clickAndAwaitNextPage(By.id("resolve-completed"));

                awaitText(By.id("notice"), "Resolved as succeeded: replays return the result given.");
                assertEquals("completed", browser.findElement(By.id("key-state")).getText());
                assertFalse(browser.getPageSource().contains("ch_found_at_provider"), "no result before the reveal");
                clickAndAwaitNextPage(By.id("reveal-stored"));
                assertEquals("\"ch_found_at_provider\"", browser.findElement(By.id("stored-result")).getText());
                browser.get(console + "/unknown-outcomes");
                assertTrue(browser.findElements(By.linkText(key)).isEmpty(), "no longer waiting for an operator");

                Outcome<String> replay = executor.runWithLease(request, lease -> "never", (tx, charge) -> charge);
                assertTrue(replay.replayed());
                assertEquals("ch_found_at_provider", replay.result());
                String log = output.toString();
                assertTrue(log.contains("console: local resolved the unknown outcome of key " + key + " of tenant shop-1 as"
                        + " succeeded; note: charge seen in the provider's dashboard"), log);
                assertTrue(log.contains("console: local revealed what key " + key + " of tenant shop-1 stores"), log);
                assertFalse(log.contains("ch_found_at_provider"), "no stored result in the log:\n" + log);
            } finally {
                stop(relay);
            }
        }
    }

    @Test
    void aReadOnlyConsoleShowsNoActionInTheBrowserAndRefusesARequeuePost() throws Exception {
        DeadLetterRows.insert(db.dataSource(), 201, "invoices", "{\"iban\": \"DE00-secret\"}");
        try (StatusServer server = ConsoleFixture.serve(db, ConsoleAccess.loopbackOnly(), true)) {
            String console = "http://127.0.0.1:" + server.port() + "/console";

            browser.get(console + "/dead-letters");
            assertTrue(browser.findElements(By.id("requeue-all")).isEmpty(), "no requeue-all link");
            assertEquals("read-only", browser.findElement(By.className("badge")).getText());
            clickAndAwaitNextPage(By.linkText("201"));
            assertTrue(browser.findElements(By.id("requeue")).isEmpty(), "no requeue button");
            String token = browser.findElement(By.name("csrf")).getAttribute("value");

            assertEquals(403, ConsoleFixture.post(console + "/dead-letters/201/requeue", null, "csrf=" + token).statusCode());
            assertEquals("dead", DeadLetterRows.status(db.dataSource(), 201));
        }
    }

    @Test
    void requeueingAllAsksForAConfirmationThenPutsEveryDeadLetterBackInLine() throws Exception {
        DeadLetterRows.insert(db.dataSource(), 301, "refunds", "{}");
        DeadLetterRows.insert(db.dataSource(), 302, "refunds", "{}");
        try (StatusServer server = ConsoleFixture.serve(db, ConsoleAccess.loopbackOnly(), false)) {
            String console = "http://127.0.0.1:" + server.port() + "/console";

            browser.get(console + "/dead-letters");
            clickAndAwaitNextPage(By.id("requeue-all"));
            assertEquals("dead", DeadLetterRows.status(db.dataSource(), 301), "nothing requeued before the confirmation");
            String token = browser.findElement(By.name("csrf")).getAttribute("value");
            assertEquals(400, ConsoleFixture.post(console + "/dead-letters/requeue-all", null, "csrf=" + token)
                    .statusCode(), "a POST without the confirmation");
            clickAndAwaitNextPage(By.id("confirm-requeue-all"));

            Await.until("the notice of the requeue", Duration.ofSeconds(20), () -> browser.findElements(By.id("notice"))
                    .stream().anyMatch(notice -> notice.getText().matches("Requeued \\d+ dead letters\\.")));
            assertEquals("pending", DeadLetterRows.status(db.dataSource(), 301));
            assertEquals("pending", DeadLetterRows.status(db.dataSource(), 302));
        }
    }

    @Test
    void theOverviewDrawsTheLastMinutesEventsAsAChartFromTheJarsUplot() throws Exception {
        db.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                + " SELECT 't1', 'charts', 'k' || n, '{}' FROM generate_series(1, 90) n");
        try (StatusServer server = ConsoleFixture.serve(db, ConsoleAccess.loopbackOnly(), false)) {
            browser.get("http://127.0.0.1:" + server.port() + "/console");

            WebElement canvas = awaitElement(By.cssSelector("#rates[data-rendered='true'] canvas"));

            assertTrue(canvas.getSize().getWidth() > 300, "a drawn chart, not an empty box: " + canvas.getSize());
            assertTrue(browser.findElement(By.id("rates")).getText().contains("written /s"), "the chart's legend");
        }
    }

    @Test
    void theOverviewChartsWhatARunningRelayPublishedAndItsLatencyAndListsItsSweepersRuns() throws Exception {
        try (TestSchema schema = TestDatabase.get().newSchema("console_history", 3)) {
            StringBuffer output = new StringBuffer();
            Process relay = start(schema, output, "run", "--migrate", "--http-port", "0", "--idle-poll-max", "100ms",
                    "--renewal-interval", "1s", "--sweep-interval", "2s", "--console", "--instance-id", "relay-history-1");
            CompletableFuture<Void> writer = null;
            try {
                String console = awaitConsoleUrl(relay, output);
                Jdbi jdbi = Jdbi.create(schema.dataSource());
                // A steady stream of events until the relay's statistics span two minutes, so both charts draw lines.
                AtomicBoolean writing = new AtomicBoolean(true);
                writer = CompletableFuture.runAsync(() -> {
                    while (writing.get()) {
                        jdbi.useHandle(h -> h.execute("INSERT INTO outbox_events (tenant_id, topic, partition_key, payload)"
                                + " SELECT 'shop-' || n % 3, 'orders', 'order-' || n, '{}'"
                                + " FROM generate_series(1, 5 + (random() * 20)::int) n"));
                        try {
                            Thread.sleep(200);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                });
                Await.until("the relay recorded what it published in two minutes, and the sweeper its runs", Duration.ofSeconds(100),
                        () -> jdbi.withHandle(h -> h.createQuery("SELECT (SELECT count(DISTINCT date_trunc('minute', bucket_start))"
                                + " FROM outbox_relay_stats WHERE instance_id = 'relay-history-1') >= 2"
                                + " AND EXISTS (SELECT 1 FROM sweeper_runs)").mapTo(Boolean.class).one()));
                writing.set(false);
                writer.get(10, TimeUnit.SECONDS);

                browser.get(console);
                WebElement rates = awaitElement(By.cssSelector("#rates[data-rendered='true'] canvas"));
                WebElement latency = awaitElement(By.cssSelector("#latency[data-rendered='true'] canvas"));

                assertTrue(rates.getSize().getWidth() > 300 && latency.getSize().getWidth() > 300,
                        "drawn charts, not empty boxes: " + rates.getSize() + ", " + latency.getSize());
                assertTrue(browser.findElement(By.id("rates")).getText().contains("published /s"), "the legend");
                assertTrue(browser.findElement(By.id("latency")).getText().contains("p99 ms"), "the legend");
                String sweeps = browser.findElement(By.id("sweeps")).getText();
                assertTrue(sweeps.contains("Keys purged") && sweeps.contains("@"), "a sweep with its process: " + sweeps);
                // Tall enough for both charts in the README's picture.
                Dimension window = browser.manage().window().getSize();
                browser.manage().window().setSize(new Dimension(1280, 1180));
                try {
                    screenshot();
                } finally {
                    browser.manage().window().setSize(window);
                }
            } finally {
                if (writer != null) {
                    writer.cancel(true);
                }
                stop(relay);
            }
            Jdbi jdbi = Jdbi.create(schema.dataSource());
            long published = jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM outbox_event_states"
                    + " WHERE status = 'published'").mapTo(Long.class).one());
            long counted = jdbi.withHandle(h -> h.createQuery("SELECT sum(published) FROM outbox_relay_stats")
                    .mapTo(Long.class).one());
            assertEquals(published, counted, "after a graceful stop, every event published is counted once");
        }
    }

    /**
     * Clicks what {@code selector} finds and waits until the browser has left the page: the click returns
     * before the navigation it starts is done, and a lookup right after it could read the old page.
     */
    private static void clickAndAwaitNextPage(By selector) {
        WebElement page = browser.findElement(By.tagName("html"));
        browser.findElement(selector).click();
        Await.until("the page after clicking " + selector, Duration.ofSeconds(20), () -> {
            try {
                page.isEnabled();
                return false;
            } catch (StaleElementReferenceException left) {
                return true;
            }
        });
    }

    /** Waits until the page shows {@code expected} in {@code selector}: a click's navigation may still be under way. */
    private static void awaitText(By selector, String expected) {
        Await.until(selector + " reads '" + expected + "'", Duration.ofSeconds(20), () -> browser.findElements(selector)
                .stream().anyMatch(element -> expected.equals(element.getText())));
    }

    private static WebElement awaitElement(By selector) {
        Await.until(selector + " in the page", Duration.ofSeconds(20), () -> !browser.findElements(selector).isEmpty());
        return browser.findElement(selector);
    }

    /**
     * Saves the page as target/console.png; with -Didempotency.test.update-screenshot=true also as the
     * README's docs/images/console.png (off by default, so a test run leaves the tracked file alone).
     */
    private static void screenshot() throws IOException {
        Path shot = ((TakesScreenshot) browser).getScreenshotAs(OutputType.FILE).toPath();
        Files.copy(shot, Path.of("target", "console.png"), StandardCopyOption.REPLACE_EXISTING);
        Path readme = Path.of("..", "docs", "images", "console.png");
        if (Boolean.getBoolean("idempotency.test.update-screenshot") && Files.isDirectory(readme.getParent())) {
            Files.copy(shot, readme, StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private static Connection rabbitMq() throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setHost("127.0.0.1");
        factory.setPort(Brokers.RABBITMQ_PORT);
        return factory.newConnection("console-browser-test");
    }

    private static GetResponse awaitMessage(Channel channel, String queue) {
        AtomicReference<GetResponse> received = new AtomicReference<>();
        Await.until("the requeued event reaches RabbitMQ queue " + queue, Duration.ofSeconds(30), () -> {
            received.set(channel.basicGet(queue, true));
            return received.get() != null;
        });
        return received.get();
    }

    private static void stop(Process relay) throws InterruptedException {
        relay.destroy();
        if (!relay.waitFor(30, TimeUnit.SECONDS)) {
            relay.destroyForcibly();
        }
    }

    private static Map<String, Object> awaitDeadLetter(Jdbi jdbi) {
        Await.until("the relay dead-letters the event RabbitMQ could not route", Duration.ofSeconds(60),
                () -> jdbi.withHandle(h -> h.createQuery("SELECT count(*) FROM outbox_retries WHERE status = 'dead'")
                        .mapTo(Long.class).one()) > 0);
        List<Map<String, Object>> dead = jdbi.withHandle(h -> h.createQuery(
                "SELECT event_id, message_id FROM outbox_retries WHERE status = 'dead'").mapToMap().list());
        assertEquals(1, dead.size());
        assertNotNull(dead.get(0).get("message_id"));
        return dead.get(0);
    }

    private static Process start(TestSchema schema, StringBuffer output, String... args) throws IOException {
        Process process = RelayProcesses.start(schema, args);
        CompletableFuture.runAsync(() -> {
            try (BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = out.readLine(); line != null; line = out.readLine()) {
                    output.append(line).append('\n');
                }
            } catch (IOException e) {
                // the process ended
            }
        });
        return process;
    }

    private static String awaitConsoleUrl(Process process, StringBuffer output) {
        Await.until("the relay serves the console or ends", Duration.ofSeconds(60),
                () -> CONSOLE_URL.matcher(output).find() || !process.isAlive());
        Matcher matcher = CONSOLE_URL.matcher(output);
        if (!matcher.find()) {
            throw new AssertionError("the relay did not serve the console:\n" + output);
        }
        return matcher.group(1);
    }
}
