package dev.idempotency.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Builds the RFC 9457 problem results; details tell the client what to do and never echo stored data. */
final class Problems {
    static final String PROBLEM_JSON = "application/problem+json";
    private static final ObjectMapper JSON = JsonMapper.builder().build();

    private final IdempotentHttpConfig config;

    Problems(IdempotentHttpConfig config) {
        this.config = config;
    }

    HttpResult keyMissing() {
        return problem(ProblemType.KEY_MISSING, "This request must carry an " + config.headerName()
                + " header with a key unique to this operation, " + acceptedForms() + ". Send it again with a new "
                + "key, and reuse that key for every retry of the same operation.");
    }

    HttpResult keyMalformed(String reason) {
        return problem(ProblemType.KEY_MALFORMED, "The " + config.headerName() + " header must be sent once, with "
                + "one key of 1 to " + config.maxKeyLength() + " printable ASCII characters, " + acceptedForms()
                + "; " + reason + ". Fix the header and send the request again.");
    }

    /** The key's accepted spellings, with examples, for a client reading a 400. */
    private String acceptedForms() {
        String example = "8e03978e-40d5-43e8-bc93-6894a57f9324";
        String quoted = config.headerName() + ": \"" + example + "\"";
        if (config.keySyntax() == KeySyntax.STRICT) {
            return "as a quoted Structured Field String (RFC 8941) only, e.g. " + quoted;
        }
        return "either unquoted (" + config.headerName() + ": " + example + "; no spaces, commas or quotes) or as a "
                + "quoted Structured Field String (" + quoted + "), which is the same key";
    }

    HttpResult keyInProgress() {
        return problem(ProblemType.KEY_IN_PROGRESS, "A request with this " + config.headerName() + " is still being "
                + "processed. Retry this request unchanged with the same key after " + config.retryAfter().toSeconds()
                + " seconds to get its response.");
    }

    HttpResult keyReused() {
        return problem(ProblemType.KEY_REUSED, "This " + config.headerName() + " was already used for a request with "
                + "another method, path, query, content type or body. Use a new key for a new operation; to get the "
                + "first request's response, retry it unchanged.");
    }

    HttpResult responseNotStorable() {
        return problem(ProblemType.RESPONSE_NOT_STORABLE, "The response to this request could not be stored for "
                + "replay, so nothing was done. A retry will fail the same way; contact the service operator.");
    }

    HttpResult temporarilyUnavailable() {
        return problem(ProblemType.TEMPORARILY_UNAVAILABLE, "A temporary failure stopped this request; it is safe to "
                + "retry. Retry it unchanged with the same key after " + config.retryAfter().toSeconds() + " seconds.");
    }

    private HttpResult problem(ProblemType type, String detail) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("type", type.uri(config));
        body.put("title", type.title());
        body.put("status", type.status());
        body.put("detail", detail);
        List<HttpHeader> headers = new ArrayList<>();
        headers.add(new HttpHeader("Cache-Control", "no-store"));
        if (type == ProblemType.KEY_IN_PROGRESS || type == ProblemType.TEMPORARILY_UNAVAILABLE) {
            headers.add(new HttpHeader("Retry-After", Long.toString(config.retryAfter().toSeconds())));
        }
        try {
            return new HttpResult(HttpResult.Kind.PROBLEM, type.status(), PROBLEM_JSON, headers, JSON.writeValueAsBytes(body), type);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a problem body always serializes", e);
        }
    }
}
