package dev.idempotency.spring.boot.console;

import dev.idempotency.console.OutboxConsole;
import dev.idempotency.spring.boot.IdempotencyAutoConfiguration;
import dev.idempotency.spring.boot.IdempotencyProperties;
import jakarta.servlet.http.HttpServlet;
import javax.sql.DataSource;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.annotation.Bean;

/**
 * The operator console ({@link OutboxConsole}) as a servlet under {@code idempotency.console.path}, when
 * {@code idempotency.console.enabled=true} in a Servlet application; off by default. It sits behind the
 * application's own security, like any of its paths.
 */
@AutoConfiguration(after = IdempotencyAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({OutboxConsole.class, HttpServlet.class, ServletRegistrationBean.class})
@ConditionalOnBean({DataSource.class, IdempotencyProperties.class})
@ConditionalOnProperty(prefix = "idempotency.console", name = "enabled", havingValue = "true")
public class IdempotencyConsoleAutoConfiguration {

    @Bean
    ServletRegistrationBean<ConsoleServlet> idempotencyConsole(DataSource dataSource, IdempotencyProperties properties) {
        IdempotencyProperties.Console settings = properties.console();
        String path = settings.path();
        ServletRegistrationBean<ConsoleServlet> registration = new ServletRegistrationBean<>(
                ConsoleServlet.over(dataSource, properties.schema(), path, settings.readOnly()), path + "/*");
        registration.setName("idempotencyConsole");
        // Its console is built as the server starts, not on the first request.
        registration.setLoadOnStartup(1);
        return registration;
    }
}
