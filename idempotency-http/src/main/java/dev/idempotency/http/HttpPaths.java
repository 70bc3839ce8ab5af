package dev.idempotency.http;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Objects;

/**
 * The one spelling of a request path that {@link IdempotentHttp} decides "key required" by and
 * fingerprints: the path within the application (no context path), each segment percent-decoded
 * and without its path parameters ({@code ;v=1}), empty and {@code .} segments dropped, {@code ..}
 * resolved, and no trailing slash ({@code /} alone for the root). Every spelling a router may take
 * for the same endpoint ({@code /orders;v=1}, {@code /%6Frders}, {@code //orders},
 * {@code /x/../orders}, {@code /orders/}) is {@code /orders} here, so none of them skips the key
 * check or becomes another request than the canonical spelling.
 */
public final class HttpPaths {

    private HttpPaths() {
    }

    /**
     * The canonical path of segments a router has already decoded and stripped of path parameters
     * (e.g. Spring's {@code PathContainer.PathSegment.valueToMatch()}), in order.
     */
    public static String canonical(List<String> decodedSegments) {
        Objects.requireNonNull(decodedSegments, "decodedSegments");
        Deque<String> kept = new ArrayDeque<>();
        for (String segment : decodedSegments) {
            if (segment == null || segment.isEmpty() || segment.equals(".")) {
                continue;
            }
            if (segment.equals("..")) {
                kept.pollLast();
            } else {
                kept.addLast(segment);
            }
        }
        return "/" + String.join("/", kept);
    }

    /**
     * The canonical path of a raw (still percent-encoded) path within the application, such as
     * {@code URI.getRawPath()} minus the context path, for an adapter whose server offers no parsed path.
     *
     * @throws IllegalArgumentException a segment is not valid percent-encoded UTF-8: answer 400
     */
    public static String canonical(String rawPath) {
        Objects.requireNonNull(rawPath, "rawPath");
        List<String> segments = new ArrayList<>();
        for (String segment : rawPath.split("/", -1)) {
            int parameters = segment.indexOf(';');
            segments.add(decode(parameters < 0 ? segment : segment.substring(0, parameters)));
        }
        return canonical(segments);
    }

    private static String decode(String segment) {
        if (segment.indexOf('%') < 0) {
            return segment;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(segment.length());
        for (int i = 0; i < segment.length(); i++) {
            char c = segment.charAt(i);
            if (c != '%') {
                bytes.writeBytes(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
                continue;
            }
            if (i + 2 >= segment.length() || Character.digit(segment.charAt(i + 1), 16) < 0
                    || Character.digit(segment.charAt(i + 2), 16) < 0) {
                throw new IllegalArgumentException("the path has a '%' not followed by two hexadecimal digits");
            }
            bytes.write(Character.digit(segment.charAt(i + 1), 16) * 16 + Character.digit(segment.charAt(i + 2), 16));
            i += 2;
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes.toByteArray()))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException("the path's percent-encoded bytes are not UTF-8", e);
        }
    }
}
