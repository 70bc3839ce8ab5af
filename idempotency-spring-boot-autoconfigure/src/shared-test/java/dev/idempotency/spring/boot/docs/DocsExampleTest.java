package dev.idempotency.spring.boot.docs;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idempotency.testing.MigratedSchema;
import dev.idempotency.testing.TestDatabase;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/** docs/spring-boot.md's controller and properties, on this Boot line, over real HTTP. */
class DocsExampleTest {
    @RegisterExtension
    static final MigratedSchema db = MigratedSchema.builder(MigratedSchema.Migration.NONE)
            .afterMigration(DocsApplication.ORDERS_TABLE).build();

    @Test
    void theDocumentedControllerWritesOneRowAndOneEventPerKeyAndReplaysTheRetry() throws Exception {
        TestDatabase database = TestDatabase.get();
        try (ConfigurableApplicationContext app = new SpringApplicationBuilder(DocsApplication.class).run(
                "--server.port=0", "--spring.datasource.url=" + database.url(),
                "--spring.datasource.username=" + (database.user() == null ? "postgres" : database.user()),
                "--spring.datasource.hikari.schema=" + db.name(), "--spring.flyway.enabled=false",
                "--idempotency.schema=" + db.name(), "--idempotency.http.paths=/orders")) {
            String port = app.getEnvironment().getProperty("local.server.port");
            String key = UUID.randomUUID().toString();
            HttpRequest post = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/orders"))
                    .header("Content-Type", "application/json").header("Idempotency-Key", key)
                    .POST(HttpRequest.BodyPublishers.ofString("{\"item\":\"book\",\"quantity\":2}")).build();
            HttpClient client = HttpClient.newHttpClient();
            HttpResponse<String> first = client.send(post, HttpResponse.BodyHandlers.ofString());
            HttpResponse<String> retry = client.send(post, HttpResponse.BodyHandlers.ofString());

            assertThat(first.statusCode()).isEqualTo(201);
            assertThat(retry.headers().firstValue("Idempotent-Replayed")).hasValue("true");
            assertThat(retry.body()).isEqualTo(first.body()).contains(key);
            JdbcTemplate jdbc = app.getBean(JdbcTemplate.class);
            assertThat(jdbc.queryForObject("SELECT count(*) FROM orders", Integer.class)).isEqualTo(1);
            assertThat(jdbc.queryForObject("SELECT count(*) FROM outbox_events WHERE topic = 'orders.created'",
                    Integer.class)).isEqualTo(1);
        }
    }
}
