package dev.idempotency.testing;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.kafka.KafkaContainer;

/**
 * A real single-node Kafka (KRaft, broker and controller in one) for one test class (or one benchmark
 * run): an
 * {@code apache/kafka} container where Docker works, otherwise a broker inside this JVM built from
 * Kafka's own server classes, on 127.0.0.1 with a temporary log directory. Topics are never created
 * automatically, so a test decides partitions and settings with {@link #createTopic}. ACLs are
 * enforced but allow everything until a test denies something with {@link #denyWrites}. Needs
 * {@code org.apache.kafka:kafka_2.13} and {@code org.testcontainers:testcontainers-kafka} on the class
 * path, which this module declares optional: a user of it adds them.
 */
public final class KafkaTestBroker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(KafkaTestBroker.class);
    /** Same release as the kafka-clients the publisher is built against. */
    private static final String IMAGE = "apache/kafka:4.4.0";
    private static final Duration ADMIN_TIMEOUT = Duration.ofSeconds(60);
    /** KRaft's ACL authorizer: everything is allowed until a test adds an ACL with {@link #denyWrites}. */
    private static final String AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

    private final String bootstrapServers;
    private final AutoCloseable server;
    private final AtomicBoolean closed = new AtomicBoolean();

    private KafkaTestBroker(String bootstrapServers, AutoCloseable server) {
        this.bootstrapServers = bootstrapServers;
        this.server = server;
    }

    /** Starts a broker: in a container if Docker works, else in this JVM. Waits until it serves requests. */
    public static KafkaTestBroker start() {
        KafkaTestBroker broker = dockerWorks() ? startContainer() : startInProcess();
        broker.awaitReady();
        return broker;
    }

    /** host:port of the broker's plaintext listener. */
    public String bootstrapServers() {
        return bootstrapServers;
    }

    /**
     * Creates a topic with replication factor 1, the given partition count and topic-level settings, and
     * returns once the broker leads every partition: a producer sending at once then finds them all (before
     * that, an idempotent producer's first batch to a partition could be retried after its later ones were
     * written, and fail as out of order).
     */
    public void createTopic(String name, int partitions, Map<String, String> configs) {
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs)))
                    .all().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            long deadline = System.nanoTime() + ADMIN_TIMEOUT.toNanos();
            while (!allLed(admin, name, partitions)) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the broker did not lead every partition of " + name + " within "
                            + ADMIN_TIMEOUT);
                }
                Thread.sleep(50);
            }
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("could not create topic " + name + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted creating topic " + name, e);
        }
    }

    /**
     * Whether every partition of {@code topic} answers a leader-only request (ListOffsets): the broker's
     * metadata names a leader a moment before the broker acts as one.
     */
    private static boolean allLed(Admin admin, String topic, int partitions)
            throws ExecutionException, TimeoutException, InterruptedException {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (int partition = 0; partition < partitions; partition++) {
            latest.put(new TopicPartition(topic, partition), OffsetSpec.latest());
        }
        try {
            admin.listOffsets(latest).all().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RetriableException) {
                return false; // created, not yet led everywhere
            }
            throw e;
        }
    }

    /**
     * Denies every client of this broker (all connect as {@code User:ANONYMOUS}) writes to {@code topic},
     * and returns once the broker enforces it.
     */
    public void denyWrites(String topic) {
        AclBinding deny = new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                new AccessControlEntry("User:ANONYMOUS", "*", AclOperation.WRITE, AclPermissionType.DENY));
        try (Admin admin = admin()) {
            admin.createAcls(List.of(deny)).all().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            // The broker applies committed ACLs asynchronously; it lists them once it enforces them.
            Await.until("the broker listing the ACL " + deny, ADMIN_TIMEOUT, () -> admin.describeAcls(deny.toFilter()).values()
                    .get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS).contains(deny));
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("could not deny writes to " + topic + ": " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted denying writes to " + topic, e);
        }
    }

    /** Stops the broker and deletes its data; a second call does nothing. */
    @Override
    public void close() {
        if (closed.getAndSet(true)) {
            return;
        }
        try {
            server.close();
        } catch (Exception e) {
            throw new IllegalStateException("could not stop the Kafka test broker", e);
        }
    }

    private Admin admin() {
        return Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) ADMIN_TIMEOUT.toMillis()));
    }

    /** A fresh KRaft node answers Admin calls only once it has elected itself and registered as a broker. */
    private void awaitReady() {
        try (Admin admin = admin()) {
            admin.describeCluster().nodes().get(ADMIN_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            close();
            throw new IllegalStateException("Kafka test broker at " + bootstrapServers + " did not become ready", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            close();
            throw new IllegalStateException("interrupted waiting for the Kafka test broker", e);
        }
    }

    private static boolean dockerWorks() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    private static KafkaTestBroker startContainer() {
        KafkaContainer container = new KafkaContainer(IMAGE)
                .withEnv("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "false")
                .withEnv("KAFKA_AUTHORIZER_CLASS_NAME", AUTHORIZER)
                .withEnv("KAFKA_ALLOW_EVERYONE_IF_NO_ACL_FOUND", "true")
                .withEnv("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")
                .withEnv("KAFKA_HEAP_OPTS", "-Xms128m -Xmx256m");
        container.start();
        log.info("Kafka test broker: container {} at {}", IMAGE, container.getBootstrapServers());
        return new KafkaTestBroker(container.getBootstrapServers(), container::stop);
    }

    private static KafkaTestBroker startInProcess() {
        Path logDir = createTempDirectory();
        int brokerPort = freePort();
        int controllerPort = freePort();
        int nodeId = 1;
        Properties props = new Properties();
        props.put("process.roles", "broker,controller");
        props.put("node.id", Integer.toString(nodeId));
        props.put("controller.quorum.voters", nodeId + "@127.0.0.1:" + controllerPort);
        props.put("listeners", "PLAINTEXT://127.0.0.1:" + brokerPort + ",CONTROLLER://127.0.0.1:" + controllerPort);
        props.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + brokerPort);
        props.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        props.put("controller.listener.names", "CONTROLLER");
        props.put("inter.broker.listener.name", "PLAINTEXT");
        props.put("log.dirs", logDir.toString());
        props.put("auto.create.topics.enable", "false");
        props.put("authorizer.class.name", AUTHORIZER);
        props.put("allow.everyone.if.no.acl.found", "true");
        // One node: every internal topic must live with a single replica.
        props.put("offsets.topic.replication.factor", "1");
        props.put("offsets.topic.num.partitions", "1");
        props.put("transaction.state.log.replication.factor", "1");
        props.put("transaction.state.log.min.isr", "1");
        props.put("transaction.state.log.num.partitions", "1");
        props.put("share.coordinator.state.topic.replication.factor", "1");
        props.put("share.coordinator.state.topic.min.isr", "1");
        props.put("group.initial.rebalance.delay.ms", "0");
        // Small footprint inside the test JVM: few threads, a small cleaner buffer.
        props.put("num.network.threads", "2");
        props.put("num.io.threads", "2");
        props.put("num.recovery.threads.per.data.dir", "1");
        props.put("background.threads", "2");
        props.put("log.cleaner.threads", "1");
        props.put("log.cleaner.dedupe.buffer.size", Integer.toString(2 * 1024 * 1024));
        props.put("log.flush.interval.messages", Long.toString(Long.MAX_VALUE));
        KafkaConfig config = new KafkaConfig(props);

        try {
            new Formatter()
                    .setPrintStream(new PrintStream(OutputStream.nullOutputStream()))
                    .setNodeId(nodeId)
                    .setClusterId(Uuid.randomUuid().toString())
                    .setControllerListenerName("CONTROLLER")
                    .setMetadataLogDirectory(logDir.toString())
                    .addDirectory(logDir.toString())
                    .run();
        } catch (Exception e) {
            deleteRecursively(logDir);
            throw new IllegalStateException("could not format the Kafka log directory " + logDir, e);
        }

        KafkaRaftServer server = new KafkaRaftServer(config, Time.SYSTEM);
        AutoCloseable stop = () -> {
            try {
                server.shutdown();
                server.awaitShutdown();
            } finally {
                deleteRecursively(logDir);
            }
        };
        try {
            server.startup();
        } catch (RuntimeException e) {
            try {
                stop.close();
            } catch (Exception suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        String bootstrap = "127.0.0.1:" + brokerPort;
        log.info("Kafka test broker: in-process KRaft node at {} (no Docker), log dir {}", bootstrap, logDir);
        return new KafkaTestBroker(bootstrap, stop);
    }

    /** A port that was free a moment ago; the broker binds it right after, on this machine only. */
    public static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path createTempDirectory() {
        try {
            return Files.createTempDirectory("kafka-test-broker-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void deleteRecursively(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            log.warn("could not delete {}: {}", dir, e.toString());
        }
    }
}
