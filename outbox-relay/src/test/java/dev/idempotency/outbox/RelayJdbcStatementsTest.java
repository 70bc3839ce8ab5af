package dev.idempotency.outbox;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.idempotency.jdbc.internal.JdbcStatement;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The relay's statements that run on plain JDBC ({@code OutboxPositions}): {@link JdbcStatement}'s parser
 * does not skip string literals or comments, so none of them may hold a parameter there, and each binds
 * exactly the names the relay sets.
 */
class RelayJdbcStatementsTest {
    private static final RelaySql SQL = new RelaySql("some_schema");
    private static final Pattern LITERAL_OR_COMMENT = Pattern.compile("'[^']*'|--[^\\n]*|/\\*.*?\\*/", Pattern.DOTALL);

    @Test
    void noStatementOfThePublishPathHoldsAParameterInsideAStringLiteralOrComment() {
        for (String named : List.of(SQL.diffStart, SQL.diffStartByIndex, SQL.diffPageByIndex, SQL.settlePage,
                SQL.settlePageWithRetries)) {
            Matcher matcher = LITERAL_OR_COMMENT.matcher(JdbcStatement.of(named).positionalSql());
            while (matcher.find()) {
                assertFalse(matcher.group().contains("?"), "a parameter inside " + matcher.group() + " of " + named);
            }
        }
    }

    @Test
    void eachStatementOfThePublishPathTakesTheParametersTheRelayBinds() {
        Map<String, List<String>> bound = Map.of(
                SQL.diffStartByIndex, List.of("partitions", "los", "xmax", "xip", "server", "limit"),
                SQL.diffPageByIndex, List.of("partitions", "los", "cursors", "hi", "server", "limit"),
                SQL.settlePage, List.of("instance", "partitionNos", "epochs", "consumed", "batches", "cursors", "server"),
                SQL.settlePageWithRetries, List.of("instance", "partitionNos", "epochs", "consumed", "batches", "cursors",
                        "server", "partitions", "movedIds", "movedStatuses", "movedAttempts", "movedDelays", "movedErrors"));
        bound.forEach((named, names) -> {
            JdbcStatement statement = JdbcStatement.of(named);
            int positions = 0;
            for (String name : names) {
                assertFalse(statement.positionsOf(name).length == 0, ":" + name + " is not in " + named);
                positions += statement.positionsOf(name).length;
            }
            assertEquals(statement.positionalSql().chars().filter(c -> c == '?').count(), positions,
                    "a parameter the relay does not bind in " + named);
        });
    }
}
