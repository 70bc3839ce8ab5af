package dev.idempotency.spring.boot.web;

import dev.idempotency.http.HttpResponseData;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.ByteArrayOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Holds everything a handler answers (status, headers, body) instead of sending it, so the rules can
 * decide what the client gets: nothing reaches the client until the key's transaction is settled.
 */
final class CapturedResponse extends HttpServletResponseWrapper {
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    /** Header names as first set, lower-case keyed. */
    private final Map<String, List<String>> headers = new LinkedHashMap<>();
    private final Map<String, String> names = new LinkedHashMap<>();
    private int status = HttpServletResponse.SC_OK;
    private String contentType;
    private String characterEncoding;
    private ServletOutputStream stream;
    private PrintWriter writer;

    CapturedResponse(HttpServletResponse response) {
        super(response);
    }

    /** What the handler answered, for the rules. */
    HttpResponseData toResponseData() {
        flushWriter();
        HttpResponseData.Builder builder = HttpResponseData.builder(status).body(body.toByteArray());
        if (contentType != null) {
            builder.contentType(contentType);
        }
        headers.forEach((lower, values) -> {
            if (!lower.equals("content-type") && !lower.equals("content-length")) {
                values.forEach(value -> builder.header(names.get(lower), value));
            }
        });
        return builder.build();
    }

    private void flushWriter() {
        if (writer != null) {
            writer.flush();
        }
    }

    @Override
    public void setStatus(int sc) {
        status = sc;
    }

    @Override
    public int getStatus() {
        return status;
    }

    @Override
    public void sendError(int sc) {
        status = sc;
    }

    @Override
    public void sendError(int sc, String msg) {
        status = sc;
    }

    @Override
    public void sendRedirect(String location) {
        status = HttpServletResponse.SC_FOUND;
        setHeader("Location", location);
    }

    @Override
    public void setHeader(String name, String value) {
        if (name.equalsIgnoreCase("Content-Type")) {
            setContentType(value);
            return;
        }
        String lower = name.toLowerCase(Locale.ROOT);
        names.putIfAbsent(lower, name);
        List<String> values = new ArrayList<>();
        if (value != null) {
            values.add(value);
        }
        headers.put(lower, values);
    }

    @Override
    public void addHeader(String name, String value) {
        if (name.equalsIgnoreCase("Content-Type")) {
            setContentType(value);
            return;
        }
        String lower = name.toLowerCase(Locale.ROOT);
        names.putIfAbsent(lower, name);
        headers.computeIfAbsent(lower, k -> new ArrayList<>()).add(value);
    }

    @Override
    public void setIntHeader(String name, int value) {
        setHeader(name, Integer.toString(value));
    }

    @Override
    public void addIntHeader(String name, int value) {
        addHeader(name, Integer.toString(value));
    }

    @Override
    public void setDateHeader(String name, long date) {
        setHeader(name, java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME.format(
                java.time.Instant.ofEpochMilli(date).atZone(java.time.ZoneOffset.UTC)));
    }

    @Override
    public void addDateHeader(String name, long date) {
        addHeader(name, java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME.format(
                java.time.Instant.ofEpochMilli(date).atZone(java.time.ZoneOffset.UTC)));
    }

    @Override
    public boolean containsHeader(String name) {
        return headers.containsKey(name.toLowerCase(Locale.ROOT))
                || (name.equalsIgnoreCase("Content-Type") && contentType != null);
    }

    @Override
    public String getHeader(String name) {
        if (name.equalsIgnoreCase("Content-Type")) {
            return contentType;
        }
        List<String> values = headers.get(name.toLowerCase(Locale.ROOT));
        return values == null || values.isEmpty() ? null : values.get(0);
    }

    @Override
    public Collection<String> getHeaders(String name) {
        List<String> values = headers.get(name.toLowerCase(Locale.ROOT));
        return values == null ? List.of() : List.copyOf(values);
    }

    @Override
    public Collection<String> getHeaderNames() {
        return List.copyOf(names.values());
    }

    @Override
    public void setContentType(String type) {
        contentType = type;
        if (type != null) {
            int charset = type.toLowerCase(Locale.ROOT).indexOf("charset=");
            if (charset >= 0) {
                characterEncoding = type.substring(charset + 8).trim();
            } else if (characterEncoding != null && writer == null) {
                // A charset set before the type belongs in it, as a servlet container would send it.
                contentType = type + ";charset=" + characterEncoding;
            }
        }
    }

    @Override
    public String getContentType() {
        return contentType;
    }

    @Override
    public void setCharacterEncoding(String charset) {
        characterEncoding = charset;
        if (contentType != null && !contentType.toLowerCase(Locale.ROOT).contains("charset=")) {
            contentType = contentType + ";charset=" + charset;
        }
    }

    @Override
    public String getCharacterEncoding() {
        return characterEncoding != null ? characterEncoding : StandardCharsets.ISO_8859_1.name();
    }

    @Override
    public void setContentLength(int len) {
    }

    @Override
    public void setContentLengthLong(long len) {
    }

    @Override
    public void setLocale(Locale loc) {
    }

    @Override
    public ServletOutputStream getOutputStream() {
        if (stream == null) {
            stream = new ServletOutputStream() {
                @Override
                public boolean isReady() {
                    return true;
                }

                @Override
                public void setWriteListener(WriteListener listener) {
                    throw new UnsupportedOperationException("asynchronous writes are not captured");
                }

                @Override
                public void write(int b) {
                    body.write(b);
                }

                @Override
                public void write(byte[] b, int off, int len) {
                    body.write(b, off, len);
                }
            };
        }
        return stream;
    }

    @Override
    public PrintWriter getWriter() {
        if (writer == null) {
            writer = new PrintWriter(new OutputStreamWriter(body, Charset.forName(getCharacterEncoding())));
        }
        return writer;
    }

    @Override
    public void flushBuffer() {
        flushWriter();
    }

    @Override
    public boolean isCommitted() {
        return false;
    }

    @Override
    public void reset() {
        resetBuffer();
        headers.clear();
        names.clear();
        status = HttpServletResponse.SC_OK;
        contentType = null;
    }

    @Override
    public void resetBuffer() {
        flushWriter();
        body.reset();
    }

    @Override
    public int getBufferSize() {
        return Integer.MAX_VALUE;
    }
}
