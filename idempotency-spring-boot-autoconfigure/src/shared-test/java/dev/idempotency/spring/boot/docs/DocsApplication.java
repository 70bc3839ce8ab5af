package dev.idempotency.spring.boot.docs;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Import;

/** An application holding only docs/spring-boot.md's controller. */
@SpringBootConfiguration
@EnableAutoConfiguration
@Import(OrdersController.class)
public class DocsApplication {
    /** docs/spring-boot.md's table. */
    static final String ORDERS_TABLE = "CREATE TABLE orders (id bigserial PRIMARY KEY, item text NOT NULL, "
            + "quantity int NOT NULL)";
}
