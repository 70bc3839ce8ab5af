package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.idempotency.core.BusinessFailure;
import dev.idempotency.core.IdempotencyConfig;
import dev.idempotency.core.ResultNotStorableException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How results and business failures are stored and read back, without a database. */
class ResultCodecTest {
    record Receipt(String id, long cents) {
    }

    private final ResultCodec codec = new ResultCodec(IdempotencyConfig.builder().allowResultTypes(Receipt.class)
            .maxResultBytes(1024).build());

    @Test
    void anAllowedRecordIsStoredByTypeNameAndReadBackEqual() {
        ResultCodec.StoredResult stored = codec.encode(new Receipt("ch_1", 100), null);

        assertEquals(Receipt.class.getName(), stored.typeName());
        assertEquals(new Receipt("ch_1", 100), codec.decode(stored.json(), stored.typeName(), null));
    }

    @Test
    void aMapIsStoredAsJsonAndEveryCallerGetsTheDecodedCopy() {
        Map<String, Object> result = Map.of("count", 5L, "amount", new BigDecimal("10.50"), "items", List.of(1, 2));
        ResultCodec.StoredResult stored = codec.encode(result, null);

        Object firstRun = codec.firstRunResult(result, stored, null);
        Object replay = codec.decode(stored.json(), stored.typeName(), null);

        assertEquals("map", stored.typeName());
        assertInstanceOf(LinkedHashMap.class, firstRun);
        assertEquals(replay, firstRun);
        Map<?, ?> map = (Map<?, ?>) firstRun;
        assertEquals(5, map.get("count"));
        assertEquals(new BigDecimal("10.50"), map.get("amount"));
        assertInstanceOf(ArrayList.class, map.get("items"));
    }

    @Test
    void aValueTypeReachesTheFirstCallerAsReturned() {
        ResultCodec.StoredResult stored = codec.encode("ch_1", null);

        assertEquals(String.class.getName(), stored.typeName());
        assertEquals("ch_1", codec.firstRunResult("ch_1", stored, null));
    }

    @Test
    void aJsonTreeIsStoredAsJson() {
        JsonNode tree = IdempotencyConfig.defaults().objectMapper().createObjectNode().put("charge", "ch_1");
        ResultCodec.StoredResult stored = codec.encode(tree, null);

        assertEquals("json", stored.typeName());
        assertEquals(tree, codec.decode(stored.json(), stored.typeName(), null));
    }

    @Test
    void nullIsNotAStorableOutcome() {
        ResultNotStorableException e = assertThrows(ResultNotStorableException.class, () -> codec.encode(null, null));

        assertTrue(e.getMessage().contains("returned null"), e.getMessage());
    }

    @Test
    void aClassNotAllowedForReplayIsRefusedWithTheTwoFixes() {
        record Unlisted(String id) {
        }
        ResultNotStorableException e = assertThrows(ResultNotStorableException.class,
                () -> codec.encode(new Unlisted("x"), null));

        assertTrue(e.getMessage().contains("allowResultTypes(Unlisted.class)"), e.getMessage());
        assertTrue(e.getMessage().contains("run(key, tenant, Unlisted.class, callback)"), e.getMessage());
        assertEquals(new Unlisted("x"), codec.decode(codec.encode(new Unlisted("x"), Unlisted.class).json(), null, Unlisted.class));
    }

    @Test
    void aResultOverTheConfiguredSizeIsRefusedNamingTheSetting() {
        ResultNotStorableException e = assertThrows(ResultNotStorableException.class,
                () -> codec.encode("x".repeat(2000), null));

        assertTrue(e.getMessage().contains("IdempotencyConfig.maxResultBytes"), e.getMessage());
    }

    @Test
    void aStoredTypeNameThisExecutorDoesNotAllowIsNotLoaded() {
        ResultNotStorableException e = assertThrows(ResultNotStorableException.class,
                () -> codec.decode("{}", "java.lang.ProcessBuilder", null));

        assertTrue(e.getMessage().contains("does not allow"), e.getMessage());
    }

    @Test
    void aStoredResultThatNoLongerFitsItsTypeSaysSoWithoutQuotingIt() {
        ResultNotStorableException e = assertThrows(ResultNotStorableException.class,
                () -> codec.decode("{\"id\": {\"secret-value\": 1}}", Receipt.class.getName(), null));

        assertTrue(e.getMessage().contains("cannot be read back as " + Receipt.class.getName()), e.getMessage());
        assertFalse(e.getMessage().contains("secret-value"), e.getMessage());
    }

    @Test
    void aBusinessFailureReadsBackWithItsCodeMessageAndDetailsMarkedReplayed() {
        BusinessFailure failure = new BusinessFailure("card_declined", "Declined", Map.of("decline_code", "insufficient_funds"));

        BusinessFailure replayed = codec.decodeFailure(codec.encodeFailure(failure));

        assertFalse(failure.replayed());
        assertTrue(replayed.replayed());
        assertEquals("card_declined", replayed.code());
        assertEquals("Declined", replayed.getMessage());
        assertEquals(Map.of("decline_code", "insufficient_funds"), replayed.details());
    }
}
