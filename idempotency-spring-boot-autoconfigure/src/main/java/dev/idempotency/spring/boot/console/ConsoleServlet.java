package dev.idempotency.spring.boot.console;

import dev.idempotency.console.OutboxConsole;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.Principal;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import javax.sql.DataSource;
import org.springframework.util.ClassUtils;

/**
 * The operator console as a servlet: each request handed to an {@link OutboxConsole} built on the
 * first one's context path (so its links hold under {@code server.servlet.context-path}), with the
 * user from {@link HttpServletRequest#getUserPrincipal()} and Spring Security's CSRF token when the
 * application has one. Authentication is the application's: this servlet lets through what reaches it.
 */
final class ConsoleServlet extends HttpServlet {
    private static final boolean SPRING_SECURITY = ClassUtils.isPresent(
            "org.springframework.security.web.csrf.CsrfToken", ConsoleServlet.class.getClassLoader());

    private final transient Function<String, OutboxConsole> consoleAt;
    private transient volatile OutboxConsole console;

    /** {@code consoleAt} builds the console for its base path (the context path and the mapping). */
    ConsoleServlet(Function<String, OutboxConsole> consoleAt) {
        this.consoleAt = consoleAt;
    }

    /** A servlet whose console reads {@code dataSource}'s outbox tables in {@code schema}. */
    static ConsoleServlet over(DataSource dataSource, String schema, String path, boolean readOnly) {
        return new ConsoleServlet(contextPath -> OutboxConsole.builder(dataSource).schema(schema).readOnly(readOnly)
                .basePath(contextPath + path).build());
    }

    @Override
    public void init() {
        console = consoleAt.apply(getServletContext().getContextPath());
    }

    @Override
    protected void service(HttpServletRequest request, HttpServletResponse response) throws IOException {
        Map<String, String> parameters = new HashMap<>();
        request.getParameterMap().forEach((name, values) -> {
            if (values.length > 0) {
                parameters.put(name, values[0]);
            }
        });
        Principal principal = request.getUserPrincipal();
        String path = request.getPathInfo() == null ? "" : request.getPathInfo();
        OutboxConsole.Response answer = console.handle(new OutboxConsole.Request(request.getMethod(), path, parameters,
                principal == null ? null : principal.getName(), SPRING_SECURITY ? SecurityCsrf.of(request) : null));
        response.setStatus(answer.status());
        answer.headers().forEach(response::setHeader);
        if (answer.body().length > 0) {
            response.setContentLength(answer.body().length);
            response.getOutputStream().write(answer.body());
        }
    }
}
