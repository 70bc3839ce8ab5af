package dev.idempotency.jdbc;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.ResultNotStorableException;
import dev.idempotency.jdbc.internal.RedactedErrors;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Turns results and business failures into stored JSON and back. A replay that has no declared
 * result type rebuilds the result by its stored type name, looked up only among the classes listed
 * here and in the configuration: no class is ever loaded by a name read from the database.
 *
 * <p>Where JSON alone decides the Java types (maps, lists, JSON trees, {@code Object}), numbers are
 * read without loss: integers as {@link Integer}, {@link Long} beyond 32 bits and
 * {@link BigInteger} beyond 64, decimals as {@link BigDecimal} with the digits and scale written.
 * The first caller gets that decoded copy too ({@link #firstRunResult}), so the first run and every
 * replay return equal values of equal types.
 */
final class ResultCodec {
    /** Type names for results stored as plain JSON shapes rather than as a Java class. */
    private static final String JSON = "json";
    private static final String MAP = "map";
    private static final String LIST = "list";

    private static final List<Class<?>> VALUE_TYPES = List.of(
            String.class, Boolean.class, Integer.class, Long.class, Short.class, Byte.class,
            Double.class, Float.class, BigDecimal.class, BigInteger.class, UUID.class);

    private final ObjectMapper mapper;
    /** The configured mapper, reading untyped numbers without loss (see the class comment). */
    private final ObjectReader exact;
    private final int maxResultBytes;
    private final Map<String, Class<?>> replayableTypes;

    ResultCodec(IdempotencyConfig config) {
        this.mapper = config.objectMapper();
        this.exact = mapper.reader().with(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
        this.maxResultBytes = config.maxResultBytes();
        Map<String, Class<?>> types = new HashMap<>();
        VALUE_TYPES.forEach(type -> types.put(type.getName(), type));
        config.allowedResultTypes().forEach(type -> types.put(type.getName(), type));
        this.replayableTypes = Map.copyOf(types);
    }

    /** A result ready to store: its JSON text and the type name a replay rebuilds it by. */
    record StoredResult(String json, String typeName) {
    }

    /**
     * Encodes {@code result}; with {@code declaredType} null, also checks that a replay could rebuild
     * it by name, so a misconfiguration fails on the first call rather than on a retry in production.
     */
    StoredResult encode(Object result, Class<?> declaredType) {
        if (result == null) {
            // A stored outcome must say what happened; null would replay as "nothing", indistinguishable from a bug.
            throw new ResultNotStorableException("The callback returned null, which is not stored as an outcome. "
                    + "Nothing was stored; return a value that says what happened (an id, a receipt, Boolean.TRUE).");
        }
        String typeName = declaredType != null ? declaredType.getName() : replayTypeName(result);
        byte[] json;
        try {
            json = mapper.writeValueAsBytes(result);
        } catch (JsonProcessingException | RuntimeException | StackOverflowError e) {
            throw new ResultNotStorableException("The callback's result of type " + className(result)
                    + " cannot be serialized to JSON: " + describe(e) + ". Nothing was stored; return a "
                    + "serializable value (no cycles, no failing getters).", e);
        }
        if (json.length > maxResultBytes) {
            throw new ResultNotStorableException("The callback's result is " + json.length
                    + " bytes of JSON, over the configured maximum of " + maxResultBytes
                    + " bytes (IdempotencyConfig.maxResultBytes). Nothing was stored; return a smaller "
                    + "result (e.g. an id to look the rest up) or raise the maximum.");
        }
        return new StoredResult(new String(json, StandardCharsets.UTF_8), typeName);
    }

    private String replayTypeName(Object result) {
        if (result instanceof JsonNode) {
            return JSON;
        }
        if (result instanceof Map<?, ?>) {
            return MAP;
        }
        if (result instanceof List<?>) {
            return LIST;
        }
        String name = result.getClass().getName();
        if (replayableTypes.get(name) != result.getClass()) {
            throw new ResultNotStorableException("The callback returned a " + name + ", which a replay may not "
                    + "rebuild by name. Nothing was stored. Pass the type to run(key, tenant, " + result.getClass().getSimpleName()
                    + ".class, callback), or allow it with IdempotencyConfig.builder().allowResultTypes("
                    + result.getClass().getSimpleName() + ".class).");
        }
        return name;
    }

    /**
     * What the first caller gets: the callback's own {@code result} when a declared class fixes its
     * Java types, else (no declared type, or a declared map, collection, JSON tree or Object) the value
     * decoded from {@code stored}, exactly as every replay will decode it.
     */
    Object firstRunResult(Object result, StoredResult stored, Class<?> declaredType) {
        if (declaredType != null ? !untyped(declaredType) : VALUE_TYPES.contains(result.getClass())) {
            return result; // its JSON round trip is exact: skip the second parse
        }
        return decode(stored.json(), stored.typeName(), declaredType);
    }

    private static boolean untyped(Class<?> type) {
        return type == Object.class || Map.class.isAssignableFrom(type) || Collection.class.isAssignableFrom(type)
                || JsonNode.class.isAssignableFrom(type);
    }

    /** Rebuilds a stored result as {@code declaredType}, or by its stored type name when that is null. */
    Object decode(String json, String typeName, Class<?> declaredType) {
        try {
            if (declaredType != null) {
                return exact.forType(declaredType).readValue(json);
            }
            if (typeName == null) {
                return null;
            }
            switch (typeName) {
                case JSON:
                    return exact.readTree(json);
                case MAP:
                    return exact.forType(new TypeReference<LinkedHashMap<String, Object>>() { }).readValue(json);
                case LIST:
                    return exact.forType(new TypeReference<ArrayList<Object>>() { }).readValue(json);
                default:
                    Class<?> type = replayableTypes.get(typeName);
                    if (type == null) {
                        throw new ResultNotStorableException("The stored result has type " + typeName
                                + ", which this executor does not allow for replays. Allow it with "
                                + "IdempotencyConfig.builder().allowResultTypes(...) or call run with the result type.");
                    }
                    return exact.forType(type).readValue(json);
            }
        } catch (JsonProcessingException e) {
            throw new ResultNotStorableException("The stored result cannot be read back as "
                    + (declaredType != null ? declaredType.getName() : typeName) + " (" + RedactedErrors.jsonProblem(e)
                    + "). Was the result type changed since the key was stored?", RedactedErrors.jsonStandIn(e));
        }
    }

    /** The stored form of a declared business failure. */
    String encodeFailure(BusinessFailure failure) {
        ObjectNode node = mapper.createObjectNode();
        node.put("code", failure.code());
        node.put("message", failure.getMessage());
        ObjectNode details = node.putObject("details");
        failure.details().forEach(details::put);
        return node.toString();
    }

    /** The failure a replay throws. */
    BusinessFailure decodeFailure(String json) {
        try {
            JsonNode node = mapper.readTree(json);
            Map<String, String> details = new LinkedHashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = node.path("details").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> field = it.next();
                details.put(field.getKey(), field.getValue().asText());
            }
            return BusinessFailure.replayed(node.path("code").asText(), node.path("message").asText(), details);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("stored failure is not valid JSON (" + RedactedErrors.jsonProblem(e) + ")",
                    RedactedErrors.jsonStandIn(e));
        }
    }

    private static String className(Object value) {
        return value == null ? "null" : value.getClass().getName();
    }

    private static String describe(Throwable e) {
        if (e instanceof StackOverflowError) {
            return "it refers to itself (stack overflow while serializing)";
        }
        return e instanceof JsonProcessingException jpe ? jpe.getOriginalMessage() : String.valueOf(e.getMessage());
    }
}
