package dev.idempotency.spring.boot.web;

import dev.idempotency.http.HttpPaths;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.springframework.http.server.PathContainer;
import org.springframework.http.server.RequestPath;

/**
 * The path a request is routed on, in the rules' canonical spelling ({@link HttpPaths}): Spring's
 * own parse of the request path within the application (as its {@code PathPattern} mappings see it:
 * the context path matched however the client spelled it, each segment decoded and without its
 * {@code ;} parameters), with dot and empty segments resolved as the Servlet container resolves them
 * for its mapping. The raw request URI is never used: {@code POST /orders;v=1} or
 * {@code POST /%6Frders} reaches the {@code /orders} controller and must meet its rules.
 */
final class RoutedPath {

    private RoutedPath() {
    }

    static String of(HttpServletRequest request) {
        List<String> segments = new ArrayList<>();
        try {
            RequestPath path = RequestPath.parse(request.getRequestURI(), request.getContextPath());
            for (PathContainer.Element element : path.pathWithinApplication().elements()) {
                if (element instanceof PathContainer.PathSegment segment) {
                    segments.add(segment.valueToMatch());
                }
            }
        } catch (IllegalArgumentException unparsable) {
            // A request URI Spring cannot split into context path and path: the container's own
            // decoded and normalised path within the application (Servlet 6 canonicalisation).
            String pathInfo = request.getPathInfo();
            segments.addAll(Arrays.asList((request.getServletPath() + (pathInfo == null ? "" : pathInfo)).split("/")));
        }
        return HttpPaths.canonical(segments);
    }
}
