package dev.idempotency.http;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A response as stored for its key and replayed: status, the replay-safe headers, content type and
 * body bytes. Its JSON form is stable:
 * {@code {"status":201,"contentType":"application/json","headers":[{"name":"Location","value":"/p/1"}],"body":"<base64>"}},
 * and reading it back gives the same body byte for byte.
 */
@JsonPropertyOrder({"status", "contentType", "headers", "body"})
@JsonInclude(JsonInclude.Include.ALWAYS)
public final class StoredResponse {
    private static final ObjectMapper JSON = JsonMapper.builder().build();

    private final int status;
    private final String contentType;
    private final List<HttpHeader> headers;
    private final byte[] body;

    /** A stored response; {@code headers} exclude Content-Type. */
    @JsonCreator
    public StoredResponse(@JsonProperty("status") int status, @JsonProperty("contentType") String contentType,
                          @JsonProperty("headers") List<HttpHeader> headers, @JsonProperty("body") byte[] body) {
        if (status < 200 || status > 599) {
            throw new IllegalArgumentException("status must be a final status, 200 to 599 (was " + status + ")");
        }
        this.status = status;
        this.contentType = contentType;
        this.headers = headers == null ? List.of() : List.copyOf(headers);
        this.body = body == null ? new byte[0] : body.clone();
    }

    /** Reads the JSON form written by {@link #toJson()}. */
    public static StoredResponse fromJson(String json) {
        try {
            return JSON.readValue(Objects.requireNonNull(json, "json"), StoredResponse.class);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException("not a stored response's JSON: " + e.getOriginalMessage(), e);
        }
    }

    /** The stable JSON form (body in base64). */
    public String toJson() {
        try {
            return JSON.writeValueAsString(this);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a stored response always serializes", e);
        }
    }

    /** The status code. */
    @JsonProperty("status")
    public int status() {
        return status;
    }

    /** The Content-Type, or null if none. */
    @JsonProperty("contentType")
    public String contentType() {
        return contentType;
    }

    /** The replay-safe headers, Content-Type excluded, in the order the handler set them. */
    @JsonProperty("headers")
    public List<HttpHeader> headers() {
        return headers;
    }

    /** The body bytes (a copy). */
    @JsonProperty("body")
    public byte[] body() {
        return body.clone();
    }

    byte[] bodyNoCopy() {
        return body;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof StoredResponse other && status == other.status && Objects.equals(contentType, other.contentType)
                && headers.equals(other.headers) && Arrays.equals(body, other.body);
    }

    @Override
    public int hashCode() {
        return Objects.hash(status, contentType, headers, Arrays.hashCode(body));
    }

    @Override
    public String toString() {
        // No body and no header values: a stored response may hold another request's data.
        return "StoredResponse[status=" + status + ", contentType=" + contentType + ", headers=" + headers.size()
                + ", bodyBytes=" + body.length + "]";
    }
}
