package dev.idempotency.spring.boot.web;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idempotency.testing.Await;
import dev.idempotency.testing.DeadLetterRows;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The operator console mounted by the starter (idempotency.console.*) in a running application: off
 * unless turned on, its own CSRF token required on every POST, read-only without actions, and a requeue
 * through it puts a dead letter back for the application's relay to publish.
 */
class ConsoleOverHttpTest {
    private static final Pattern CSRF = Pattern.compile("name=\"csrf\" value=\"([^\"]+)\"");
    private static final Pattern SPRING_CSRF = Pattern.compile("name=\"_csrf\" value=\"([^\"]+)\"");

    @RegisterExtension
    static final RunningApplication shop = RunningApplication.shop("--idempotency.console.enabled=true",
            "--idempotency.relay.enabled=true", "--idempotency.relay.publisher=log", "--idempotency.relay.partitions=4",
            "--idempotency.relay.idle-poll-max=200ms");

    @Test
    void theConsoleIsNotServedUnlessTurnedOn() throws Exception {
        try (RunningApplication plain = shop.another()) {
            assertThat(plain.send(plain.request("/idempotency/console").GET()).statusCode()).isEqualTo(404);
        }
        HttpResponse<String> overview = shop.send(shop.request("/idempotency/console").GET());
        assertThat(overview.statusCode()).isEqualTo(200);
        assertThat(overview.body()).contains("Pending events").contains("href=\"/idempotency/console/dead-letters\"");
        assertThat(overview.headers().firstValue("Content-Security-Policy")).hasValueSatisfying(
                csp -> assertThat(csp).startsWith("default-src 'none'"));
        assertThat(shop.send(shop.request("/idempotency/console/console.css").GET()).statusCode()).isEqualTo(200);
    }

    @Test
    void aRequeueThroughTheConsolePutsTheDeadLetterBackAndTheRelayPublishesIt() throws Exception {
        DeadLetterRows.insert(shop.schema().dataSource(), 501, "orders", "{\"item\": \"book\"}");
        String detail = shop.send(shop.request("/idempotency/console/dead-letters/501").GET()).body();
        assertThat(detail).contains("action=\"/idempotency/console/dead-letters/501/requeue\"");

        HttpResponse<String> requeue = postForm(shop, "/idempotency/console/dead-letters/501/requeue", "csrf=" + csrf(detail));

        assertThat(requeue.statusCode()).isEqualTo(303);
        assertThat(requeue.headers().firstValue("Location")).hasValue("/idempotency/console/dead-letters?requeued=501");
        // Published: the relay deletes an event's retry row once the broker (here its log) took it.
        Await.until("the requeued dead letter 501 published", () -> DeadLetterRows.status(shop.schema().dataSource(), 501) == null);
    }

    @Test
    void aPostWithoutTheConsolesCsrfTokenIsRefused() throws Exception {
        DeadLetterRows.insert(shop.schema().dataSource(), 502, "orders", "{}");

        HttpResponse<String> missing = postForm(shop, "/idempotency/console/dead-letters/502/requeue", "");
        HttpResponse<String> wrong = postForm(shop, "/idempotency/console/dead-letters/502/requeue", "csrf=guess");

        assertThat(missing.statusCode()).isEqualTo(403);
        assertThat(wrong.statusCode()).isEqualTo(403);
        assertThat(DeadLetterRows.status(shop.schema().dataSource(), 502)).isEqualTo("dead");
    }

    @Test
    void aReadOnlyConsoleShowsNoActionAndRefusesARequeueWithTheToken() throws Exception {
        try (RunningApplication readOnly = shop.another("--idempotency.console.enabled=true",
                "--idempotency.console.read-only=true", "--idempotency.console.path=/ops/outbox")) {
            DeadLetterRows.insert(readOnly.schema().dataSource(), 503, "orders", "{}");
            String detail = readOnly.send(readOnly.request("/ops/outbox/dead-letters/503").GET()).body();

            HttpResponse<String> requeue = postForm(readOnly, "/ops/outbox/dead-letters/503/requeue", "csrf=" + csrf(detail));

            assertThat(detail).contains("read-only").doesNotContain("/requeue");
            assertThat(requeue.statusCode()).isEqualTo(403);
            assertThat(DeadLetterRows.status(readOnly.schema().dataSource(), 503)).isEqualTo("dead");
        }
    }

    @Test
    void withSpringSecuritysCsrfFilterEveryFormCarriesItsTokenSoThatARequeuePassesIt() throws Exception {
        try (RunningApplication secured = shop.another("--idempotency.console.enabled=true", "--shop.csrf-filter=true")) {
            DeadLetterRows.insert(secured.schema().dataSource(), 504, "orders", "{}");
            HttpResponse<String> page = secured.send(secured.request("/idempotency/console/dead-letters/504").GET());
            String session = page.headers().firstValue("Set-Cookie").orElseThrow().split(";")[0];
            Matcher spring = SPRING_CSRF.matcher(page.body());
            assertThat(spring.find()).as("Spring's token in %s", page.body()).isTrue();
            String target = "/idempotency/console/dead-letters/504/requeue";

            HttpResponse<String> consoleTokenOnly = secured.send(secured.request(target).header("Cookie", session)
                    .header("Content-Type", "application/x-www-form-urlencoded")
                    .POST(HttpRequest.BodyPublishers.ofString("csrf=" + csrf(page.body()))));
            assertThat(consoleTokenOnly.statusCode()).as("refused by Spring's CsrfFilter").isEqualTo(403);
            assertThat(DeadLetterRows.status(secured.schema().dataSource(), 504)).isEqualTo("dead");

            HttpResponse<String> both = secured.send(secured.request(target).header("Cookie", session)
                    .header("Content-Type", "application/x-www-form-urlencoded")
                    .POST(HttpRequest.BodyPublishers.ofString("csrf=" + csrf(page.body()) + "&_csrf="
                            + URLEncoder.encode(spring.group(1), StandardCharsets.UTF_8))));
            assertThat(both.statusCode()).isEqualTo(303);
            assertThat(DeadLetterRows.status(secured.schema().dataSource(), 504)).isNotEqualTo("dead");
        }
    }

    private static HttpResponse<String> postForm(RunningApplication application, String target, String form) throws Exception {
        return application.send(application.request(target).header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(form)));
    }

    private static String csrf(String page) {
        Matcher matcher = CSRF.matcher(page);
        assertThat(matcher.find()).as("a CSRF field in %s", page).isTrue();
        return matcher.group(1);
    }
}
