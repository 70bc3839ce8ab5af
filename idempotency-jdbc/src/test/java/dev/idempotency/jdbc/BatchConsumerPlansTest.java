package dev.idempotency.jdbc;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The batch consumer's statements over a batch's keys plan one index lookup per key even when
 * PostgreSQL planned them once for a keys table it believed empty (a new deployment, a TRUNCATE, no
 * ANALYZE yet) and keeps that plan: joined plainly, that plan hashed the batch and scanned the whole
 * table at every batch, so each batch cost more as the table grew, until autovacuum next analyzed it.
 */
@Timeout(60)
class BatchConsumerPlansTest {
    @RegisterExtension
    static final ExecutorFixture db = new ExecutorFixture(1);

    @Test
    void theReadOfTakenKeysTheCompletionTheReleaseAndTheSealLookEachKeyUpByIndexOrRowInAPlanMadeForAnEmptyTable() {
        ExecutorSql.BatchStatements sql = new ExecutorSql.BatchStatements(db.schema.name());
        // The fixture's schema is new: its keys table has never been analyzed.
        assertLooksKeysUpByIndex(sql.readBatchKeys.namedSql(), "");
        assertLooksKeysUpByIndex(sql.completeBatch.namedSql(), ", 'true', 'java.lang.Boolean', 100");
        assertLooksKeysUpByIndex(sql.releaseBatchClaims.namedSql(), "");
        // The seal finds most claims by the rows the claim returned, and those rewritten with events by key.
        String seal = assertLooksKeysUpByIndex(sql.sealBatchClaims.namedSql(), ", '{\"(0,1)\",\"(0,2)\"}', 100");
        assertTrue(seal.contains("Tid Scan on idempotency_keys"), seal);
    }

    /**
     * The generic plan of {@code statement}, bound to 100 keys and then {@code moreArguments} (result, its
     * type, the rows, the count), which it returns.
     */
    private static String assertLooksKeysUpByIndex(String statement, String moreArguments) {
        String tenants = IntStream.range(0, 100).mapToObj(m -> "t1").collect(Collectors.joining(",", "'{", "}'"));
        String keys = IntStream.range(0, 100).mapToObj(m -> "planned:" + m).collect(Collectors.joining(",", "'{", "}'"));
        String plan = db.jdbi.withHandle(handle -> {
            handle.execute("SET plan_cache_mode = force_generic_plan");
            handle.execute("PREPARE batch_statement AS " + numbered(statement));
            try {
                List<String> lines = handle.createQuery("EXPLAIN EXECUTE batch_statement(" + tenants + ", " + keys
                        + moreArguments + ")").mapTo(String.class).list();
                return String.join("\n", lines);
            } finally {
                handle.execute("DEALLOCATE batch_statement");
                handle.execute("RESET plan_cache_mode");
            }
        });
        assertFalse(plan.contains("Seq Scan on idempotency_keys"), plan);
        assertTrue(plan.contains("Index Scan using idempotency_keys_pkey on idempotency_keys"), plan);
        return plan;
    }

    /**
     * The statement's parameters as PREPARE's, numbered in the order the test binds them: tenants, keys,
     * result, its type, the rows, the count.
     */
    private static String numbered(String named) {
        Map<String, String> numbers = new LinkedHashMap<>();
        for (String parameter : List.of(":tenants", ":keys", ":result", ":resultType", ":rowIds", ":expected")) {
            if (Pattern.compile(parameter + "\\b").matcher(named).find()) {
                numbers.put(parameter, "\\$" + (numbers.size() + 1));
            }
        }
        String numbered = named;
        for (Map.Entry<String, String> number : numbers.entrySet()) {
            numbered = numbered.replaceAll(number.getKey() + "\\b", number.getValue());
        }
        return numbered;
    }
}
