package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import org.junit.jupiter.api.Test;

class RelaySqlTest {
    @Test
    void everyStatementIsRenderedOnceForTheQuotedSchema() throws IllegalAccessException {
        RelaySql sql = new RelaySql("tenant_a");
        int statements = 0;
        for (Field field : RelaySql.class.getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers())) {
                continue;
            }
            String text = (String) field.get(sql);
            assertFalse(text.contains("<schema>"), field.getName() + " still holds the placeholder");
            assertTrue(text.contains("\"tenant_a\"."), field.getName() + " does not name the schema: " + text);
            statements++;
        }
        assertTrue(statements >= 20, "statements found: " + statements);
    }

    @Test
    void refusesASchemaNameThatWouldNeedMoreThanPlainQuotes() {
        assertThrows(IllegalArgumentException.class, () -> new RelaySql("x\"; DROP TABLE y; --"));
    }
}
