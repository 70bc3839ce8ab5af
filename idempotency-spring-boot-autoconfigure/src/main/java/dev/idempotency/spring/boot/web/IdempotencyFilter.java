package dev.idempotency.spring.boot.web;

import dev.idempotency.http.HttpHeader;
import dev.idempotency.http.HttpRequestData;
import dev.idempotency.http.HttpResult;
import dev.idempotency.http.IdempotentHttp;
import dev.idempotency.http.IdempotentHttpConfig;
import dev.idempotency.jdbc.PostgresTransaction;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.Principal;
import java.util.Collections;
import java.util.function.Predicate;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Runs each request that needs an {@code Idempotency-Key} (method and path configured, or a
 * controller method annotated {@link IdempotentEndpoint}) inside a Spring transaction that the
 * executor joins: the controller's JdbcTemplate, JPA and outbox writes, the key and the stored
 * response commit together, and only when the rules store the response. The handler's response is
 * held back until then; the client gets what {@link IdempotentHttp} decides (the response, its
 * replay, or a problem). Every other request passes through untouched.
 */
public final class IdempotencyFilter extends OncePerRequestFilter {
    private final IdempotentHttp<PostgresTransaction> http;
    private final TransactionTemplate transactions;
    private final Predicate<HttpServletRequest> annotated;
    private final TenantResolver tenants;
    private final int maxRequestBytes;
    /** False when no path is configured: then only annotated endpoints need a key, not every POST. */
    private final boolean guardsPaths;

    /** The tenant of a request: the application's, never a client's choice unless it says so. */
    @FunctionalInterface
    public interface TenantResolver {
        String tenant(HttpServletRequest request);

        /** The authenticated principal's name, or {@code default} for anonymous requests. */
        static TenantResolver principalOrDefault() {
            return request -> {
                Principal principal = request.getUserPrincipal();
                return principal == null ? "default" : principal.getName();
            };
        }
    }

    IdempotencyFilter(IdempotentHttp<PostgresTransaction> http, TransactionTemplate transactions,
                      Predicate<HttpServletRequest> annotated, TenantResolver tenants, int maxRequestBytes) {
        this.http = http;
        this.transactions = transactions;
        this.annotated = annotated;
        this.tenants = tenants;
        this.maxRequestBytes = maxRequestBytes;
        IdempotentHttpConfig config = http.config();
        this.guardsPaths = !config.pathPrefixes().isEmpty() || !config.pathPatterns().isEmpty();
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        // The path the application routes on, never the raw URI: its other spellings (;v=1, %6F, //,
        // /./, /x/../, a trailing slash) get the same rules and the same fingerprint.
        String path = null;
        boolean byPath = false;
        if (guardsPaths && http.config().methods().contains(request.getMethod())) {
            path = RoutedPath.of(request);
            byPath = http.requiresKey(request.getMethod(), path);
        }
        if (!byPath && !annotated.test(request)) {
            chain.doFilter(request, response);
            return;
        }
        if (path == null) {
            path = RoutedPath.of(request);
        }
        BufferedRequest buffered = BufferedRequest.read(request, maxRequestBytes);
        if (buffered == null) {
            response.sendError(HttpServletResponse.SC_REQUEST_ENTITY_TOO_LARGE);
            return;
        }
        HttpRequestData data = HttpRequestData.builder(request.getMethod(), path)
                .query(request.getQueryString())
                .contentType(request.getContentType())
                .keyFieldLines(Collections.list(request.getHeaders(http.config().headerName())))
                .body(buffered.body())
                .build();
        String tenant = tenants.tenant(request);
        HttpResult result;
        try {
            result = transactions.execute(status -> {
                HttpResult decided = run(data, tenant, buffered, response, chain, status);
                if (decided.kind() != HttpResult.Kind.FIRST_RUN) {
                    // Nothing to keep: a replay wrote nothing, and a response not stored must leave no
                    // trace (JPA writes not yet flushed included).
                    status.setRollbackOnly();
                }
                return decided;
            });
        } catch (HandlerFailed e) {
            if (e.getCause() instanceof ServletException servlet) {
                throw servlet;
            }
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            throw e;
        }
        write(result, response);
    }

    private HttpResult run(HttpRequestData data, String tenant, BufferedRequest request, HttpServletResponse response,
                           FilterChain chain, org.springframework.transaction.TransactionStatus status) {
        return http.<RuntimeException>handleRequiringKey(data, tenant, tx -> {
            CapturedResponse captured = new CapturedResponse(response);
            IdempotentRequest.bind(tx);
            try {
                chain.doFilter(request, captured);
            } catch (ServletException | IOException e) {
                throw new HandlerFailed(e); // rolls back the key's savepoint, then the transaction
            } finally {
                IdempotentRequest.unbind();
            }
            // JPA's pending writes reach the database now, inside the key's savepoint, not at commit.
            status.flush();
            return captured.toResponseData();
        });
    }

    private static void write(HttpResult result, HttpServletResponse response) throws IOException {
        response.setStatus(result.status());
        for (HttpHeader header : result.headers()) {
            response.addHeader(header.name(), header.value());
        }
        if (result.contentType() != null) {
            response.setContentType(result.contentType());
        }
        byte[] body = result.body();
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
        response.flushBuffer();
    }

    /** Carries the handler's checked exception through the transaction template, which rolls back. */
    private static final class HandlerFailed extends RuntimeException {
        HandlerFailed(Exception cause) {
            super(cause.getMessage(), cause);
        }
    }

}
