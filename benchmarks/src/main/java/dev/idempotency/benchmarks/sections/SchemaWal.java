package dev.idempotency.benchmarks.sections;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The WAL one schema's objects caused between two positions, read with {@code pg_waldump}: every
 * record that touches a table, index, TOAST table or sequence of the schema, plus the commit records
 * of the transactions that wrote them. On a shared server the cluster-wide LSN difference also counts
 * everyone else's WAL; this does not. It needs the server's {@code pg_wal} directory on this machine
 * (readable) and {@code pg_waldump}; otherwise {@link #start} says why and the figure is left out.
 * A temporary physical replication slot, held by this object's own session, keeps the segments from
 * being recycled until they are read.
 */
final class SchemaWal implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(SchemaWal.class);
    private static final Pattern RECORD = Pattern.compile(
            "^rmgr: (\\S+)\\s+len \\(rec/tot\\):\\s*\\d+/\\s*(\\d+), tx:\\s*(\\d+), lsn: \\S+, prev \\S+, desc: (.*)$");
    private static final Pattern RELATION = Pattern.compile("rel \\d+/(\\d+)/(\\d+)");

    /** The relfilenodes of everything in the schema that WAL can name, with their TOAST tables and indexes. */
    static final String SCHEMA_FILENODES = """
            SELECT pg_relation_filenode(c.oid) FROM pg_class c
            WHERE c.relnamespace = CAST(:schema AS regnamespace) AND pg_relation_filenode(c.oid) IS NOT NULL
            UNION
            SELECT pg_relation_filenode(t.oid) FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid
            WHERE c.relnamespace = CAST(:schema AS regnamespace)
            UNION
            SELECT pg_relation_filenode(i.indexrelid) FROM pg_class c JOIN pg_index i ON i.indrelid = c.reltoastrelid
            WHERE c.relnamespace = CAST(:schema AS regnamespace)""";

    /** Reserves WAL from now on for this session only (dropped when it ends), and says where it starts. */
    static final String RESERVE_WAL = """
            SELECT lsn::text FROM pg_create_physical_replication_slot(:slot, true, true)""";

    static final String WAL_PLACE = """
            SELECT current_setting('data_directory') AS data_directory,
                   (SELECT oid FROM pg_database WHERE datname = current_database()) AS database_oid,
                   (SELECT timeline_id FROM pg_control_checkpoint()) AS timeline""";

    /** What {@code pg_waldump} found: bytes and records attributable, and full-page images among them. */
    record Attributed(long bytes, long records, long fullPageImages) {
    }

    private final Handle session;
    private final String waldump;
    private final Path walDirectory;
    private final String databaseOid;
    private final int timeline;

    private SchemaWal(Handle session, String waldump, Path walDirectory, String databaseOid, int timeline) {
        this.session = session;
        this.waldump = waldump;
        this.walDirectory = walDirectory;
        this.databaseOid = databaseOid;
        this.timeline = timeline;
    }

    /**
     * A reader holding WAL from now on, or null (with the reason logged once) when this machine
     * cannot read the server's WAL.
     */
    static SchemaWal start(Jdbi jdbi) {
        Handle session = jdbi.open();
        try {
            var place = session.createQuery(WAL_PLACE).mapToMap().one();
            Path wal = Path.of(String.valueOf(place.get("data_directory")), "pg_wal");
            String waldump = findWaldump(session);
            if (waldump == null || !Files.isReadable(wal) || !Files.isDirectory(wal)) {
                log.info("WAL by schema left out: {} (needs pg_waldump and the server's pg_wal readable here)",
                        waldump == null ? "no pg_waldump found" : wal + " is not readable");
                session.close();
                return null;
            }
            session.createQuery(RESERVE_WAL).bind("slot", "bench_wal_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12))
                    .mapTo(String.class).one();
            return new SchemaWal(session, waldump, wal, String.valueOf(place.get("database_oid")),
                    ((Number) place.get("timeline")).intValue());
        } catch (RuntimeException e) {
            log.info("WAL by schema left out: {}", e.getMessage());
            session.close();
            return null;
        }
    }

    private static String findWaldump(Handle session) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(java.io.File.pathSeparator)) {
            if (Files.isExecutable(Path.of(dir, "pg_waldump"))) {
                return Path.of(dir, "pg_waldump").toString();
            }
        }
        String major = session.createQuery("SELECT current_setting('server_version_num')::int / 10000").mapTo(String.class).one();
        Path debian = Path.of("/usr/lib/postgresql", major, "bin", "pg_waldump");
        return Files.isExecutable(debian) ? debian.toString() : null;
    }

    /**
     * The WAL from {@code from} up to what the server has flushed now that touched {@code schema}'s
     * objects (read after the fact; call it once the work measured has committed).
     */
    Attributed since(String schema, String from) throws IOException, InterruptedException {
        String to = session.createQuery("SELECT pg_current_wal_flush_lsn()::text").mapTo(String.class).one();
        Set<String> filenodes = new HashSet<>(session.createQuery(SCHEMA_FILENODES).bind("schema", schema)
                .mapTo(String.class).list());
        List<String> command = new ArrayList<>(List.of(waldump, "-p", walDirectory.toString(), "-t", Integer.toString(timeline),
                "-s", from, "-e", to));
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        Set<String> writers = new HashSet<>();
        long bytes = 0;
        long records = 0;
        long images = 0;
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                Matcher record = RECORD.matcher(line);
                if (!record.matches()) {
                    continue;
                }
                String tx = record.group(3);
                String desc = record.group(4);
                boolean ours = false;
                Matcher relation = RELATION.matcher(desc);
                while (!ours && relation.find()) {
                    ours = relation.group(1).equals(databaseOid) && filenodes.contains(relation.group(2));
                }
                if (ours) {
                    if (!"0".equals(tx)) {
                        writers.add(tx);
                    }
                } else if (!("Transaction".equals(record.group(1)) && writers.contains(tx))) {
                    continue;
                }
                bytes += Long.parseLong(record.group(2));
                records++;
                if (desc.contains(" FPW")) {
                    images++;
                }
            }
        }
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
        return new Attributed(bytes, records, images);
    }

    /** Ends the session, which drops its temporary slot. */
    @Override
    public void close() {
        session.close();
    }
}
