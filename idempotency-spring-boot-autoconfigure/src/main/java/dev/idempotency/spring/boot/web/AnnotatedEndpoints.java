package dev.idempotency.spring.boot.web;

import jakarta.servlet.http.HttpServletRequest;
import java.util.function.Predicate;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerExecutionChain;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;
import org.springframework.web.util.ServletRequestPathUtils;

/** True for a request that Spring MVC maps to a controller method annotated {@link IdempotentEndpoint}. */
final class AnnotatedEndpoints implements Predicate<HttpServletRequest> {
    /** Spring MVC's bean of that name: the one {@code @RequestMapping} methods are registered in. */
    static final String MAPPING_BEAN = "requestMappingHandlerMapping";

    private final BeanFactory beans;
    private volatile RequestMappingHandlerMapping mappings;

    AnnotatedEndpoints(BeanFactory beans) {
        this.beans = beans;
    }

    /** Looked up at the first request, once MVC is fully set up; null when the application has no MVC. */
    private RequestMappingHandlerMapping mappings() {
        RequestMappingHandlerMapping found = mappings;
        if (found == null && beans.containsBean(MAPPING_BEAN)) {
            found = beans.getBean(MAPPING_BEAN, RequestMappingHandlerMapping.class);
            mappings = found;
        }
        return found;
    }

    @Override
    public boolean test(HttpServletRequest request) {
        RequestMappingHandlerMapping mappings = mappings();
        if (mappings == null) {
            return false;
        }
        // Mappings match on the parsed path the DispatcherServlet caches; outside it, parse it here and
        // put back what was there, so the dispatcher parses the request as it would without us.
        Object previous = request.getAttribute(ServletRequestPathUtils.PATH_ATTRIBUTE);
        try {
            ServletRequestPathUtils.parseAndCache(request);
            HandlerExecutionChain chain = mappings.getHandler(request);
            return chain != null && chain.getHandler() instanceof HandlerMethod method
                    && method.hasMethodAnnotation(IdempotentEndpoint.class);
        } catch (Exception e) {
            // No mapping decision here: the dispatcher answers the request as it would without us.
            return false;
        } finally {
            if (previous == null) {
                request.removeAttribute(ServletRequestPathUtils.PATH_ATTRIBUTE);
            } else {
                request.setAttribute(ServletRequestPathUtils.PATH_ATTRIBUTE, previous);
            }
        }
    }
}
