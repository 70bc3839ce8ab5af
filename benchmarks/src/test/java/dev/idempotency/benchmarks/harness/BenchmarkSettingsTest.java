package dev.idempotency.benchmarks.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The settings refuse what would make a run meaningless or unsafe for a shared server, naming the setting. */
class BenchmarkSettingsTest {

    @Test
    void defaultsRunEverySectionAtOneEightAndThirtyTwoCallers() {
        BenchmarkSettings settings = BenchmarkSettings.builder().build();
        assertEquals(List.of("pgbench", "overhead", "redis", "storm", "relay", "latency", "peer", "sweeper", "relaycost", "http", "tracing"), settings.sections());
        assertEquals(List.of(1, 8, 32), settings.callers());
        assertEquals(10, settings.window().toSeconds());
        assertEquals(64, settings.stormCallers());
    }

    @Test
    void sectionsAndCallersAreOrderedAndDeduplicated() {
        BenchmarkSettings settings = BenchmarkSettings.builder()
                .sections(List.of("storm", "pgbench")).callers(List.of(8, 1, 8)).build();
        assertEquals(List.of("pgbench", "storm"), settings.sections());
        assertEquals(List.of(1, 8), settings.callers());
    }

    @Test
    void invalidValuesFailNamingTheSetting() {
        assertMessage("seconds", BenchmarkSettings.builder().seconds(0));
        assertMessage("warmup", BenchmarkSettings.builder().warmupSeconds(-1));
        assertMessage("jitWarmup", BenchmarkSettings.builder().jitWarmupSeconds(-1));
        assertMessage("jitQuietWithin", BenchmarkSettings.builder().jitQuietWithinSeconds(601));
        assertMessage("repeat", BenchmarkSettings.builder().repeat(0));
        assertMessage("callers", BenchmarkSettings.builder().callers(List.of(1, 65)));
        assertMessage("stormCallers", BenchmarkSettings.builder().stormCallers(201));
        assertMessage("sweeperRows", BenchmarkSettings.builder().sweeperRows(0));
        assertMessage("sections", BenchmarkSettings.builder().sections(List.of("nosuch")));
        assertMessage("jdbcUrl", BenchmarkSettings.builder().jdbcUrl("jdbc:mysql://localhost/test"));
        assertMessage("redisUri", BenchmarkSettings.builder().redisUri("http://127.0.0.1:6379"));
        assertMessage("callerThreads", BenchmarkSettings.builder().callerThreads("green"));
        assertMessage("pgbouncerUrl", BenchmarkSettings.builder().sections(List.of("pgbouncer")));
        assertMessage("pgbouncerUrl", BenchmarkSettings.builder().pgbouncerUrl("postgres://127.0.0.1:6432/test"));
        IllegalArgumentException linger = assertThrows(IllegalArgumentException.class,
                () -> RelayBenchSettings.builder().lingerMillis(1_001).build());
        assertTrue(linger.getMessage().startsWith("relayLingerMs"), linger.getMessage());
    }

    @Test
    void relaysKeepTheLibrarysLingerUnlessOneIsGiven() {
        assertEquals(null, RelayBenchSettings.builder().build().lingerMillis());
        assertEquals(25, RelayBenchSettings.builder().lingerMillis(25).build().lingerMillis());
    }

    @Test
    void virtualCallerThreadsAreTakenWhereJavaHasThemAndRefusedWhereItDoesNot() throws Exception {
        BenchmarkSettings.Builder virtual = BenchmarkSettings.builder().callerThreads("virtual");
        if (Runtime.version().feature() >= CallerThreads.VIRTUAL_SINCE) {
            assertEquals(CallerThreads.VIRTUAL, virtual.build().callerThreads());
            Thread caller = CallerThreads.VIRTUAL.unstarted("caller", () -> { });
            assertEquals(true, Thread.class.getMethod("isVirtual").invoke(caller)); // Java 17 has no isVirtual to call
        } else {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, virtual::build);
            assertEquals("callerThreads virtual needs Java 21 or later, and this is Java " + Runtime.version().feature()
                    + "; run the jar with a newer java", e.getMessage());
        }
        assertEquals(CallerThreads.PLATFORM, BenchmarkSettings.builder().build().callerThreads());
    }

    private static void assertMessage(String setting, BenchmarkSettings.Builder builder) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, builder::build);
        assertTrue(e.getMessage().startsWith(setting), e.getMessage());
    }
}
