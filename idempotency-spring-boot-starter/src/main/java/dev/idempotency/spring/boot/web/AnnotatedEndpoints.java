package dev.idempotency.spring.boot.web;

import jakarta.servlet.http.HttpServletRequest;
import java.util.function.Predicate;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerExecutionChain;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

/** True for a request that Spring MVC maps to a controller method annotated {@link IdempotentEndpoint}. */
final class AnnotatedEndpoints implements Predicate<HttpServletRequest> {
    private final RequestMappingHandlerMapping mappings;

    AnnotatedEndpoints(RequestMappingHandlerMapping mappings) {
        this.mappings = mappings;
    }

    @Override
    public boolean test(HttpServletRequest request) {
        try {
            HandlerExecutionChain chain = mappings.getHandler(request);
            return chain != null && chain.getHandler() instanceof HandlerMethod method
                    && method.hasMethodAnnotation(IdempotentEndpoint.class);
        } catch (Exception e) {
            // No mapping decision here: the dispatcher answers the request as it would without us.
            return false;
        }
    }
}
