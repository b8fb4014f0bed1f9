/*
 * Neo4jLauncher: runs a real Neo4j 5.26 Community DBMS (embedded, from Maven Central
 * artifacts) with only the Bolt connector, no auth, small memory, for evomem tests and CI.
 *
 * Usage: java -jar target/neo4j-launcher.jar [--port P] [--data DIR] [--keep] [--watch-stdin]
 *   --port P       Bolt port on 127.0.0.1 (0 or absent: a random free port)
 *   --data DIR     Neo4j home/data folder (absent: a temp folder, deleted on exit unless --keep)
 *   --keep         keep the data folder on exit
 *   --watch-stdin  also shut down when stdin reaches EOF (for a parent that holds a pipe)
 * Prints exactly one line "NEO4J_READY bolt://127.0.0.1:<port>" on stdout once a Bolt
 * handshake succeeds, then blocks until SIGTERM/SIGINT (or stdin EOF), shutting down cleanly.
 * Started by scripts/neo4j-server.
 */
package evomem;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

public final class Neo4jLauncher {
    private static final String HOST = "127.0.0.1";

    public static void main(String[] args) throws Exception {
        int port = 0;
        Path data = null;
        boolean keep = false, watchStdin = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--data" -> data = Path.of(args[++i]).toAbsolutePath();
                case "--keep" -> keep = true;
                case "--watch-stdin" -> watchStdin = true;
                default -> { System.err.println("unknown argument: " + args[i]); System.exit(2); }
            }
        }
        if (port == 0) port = freePort();
        boolean deleteOnExit = !keep && data == null;
        if (data == null) data = Files.createTempDirectory("evomem-neo4j-");
        Files.createDirectories(data);
        final Path home = data;

        CountDownLatch stopped = new CountDownLatch(1);
        AtomicReference<DatabaseManagementService> ref = new AtomicReference<>();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("neo4j-launcher: shutting down");
            DatabaseManagementService running = ref.get();
            try { if (running != null) running.shutdown(); } catch (Throwable t) { t.printStackTrace(); }
            if (deleteOnExit) deleteTree(home);
            stopped.countDown();
        }, "neo4j-launcher-shutdown"));

        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress(HOST, port))
                .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                .setConfig(HttpConnector.enabled, false)
                .setConfig(HttpsConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(96))
                .setConfig(GraphDatabaseSettings.keep_logical_logs, "1 files")
                .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(16))
                .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                // Backstop: no transaction runs unbounded (the default is 0 = forever). User Cypher
                // never reaches this server (graph/cypher/sandbox.py); this bounds everything else.
                .setConfig(GraphDatabaseSettings.transaction_timeout, Duration.ofSeconds(120))
                // Netty's default graceful Bolt shutdown idles ~15 s; tests want a quick stop.
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0)
                .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(2))
                .build();
        ref.set(dbms);

        if (!dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME).isAvailable(120_000)) {
            System.err.println("neo4j-launcher: database did not become available");
            System.exit(1);
        }
        waitForBolt(port, TimeUnit.SECONDS.toMillis(60));
        System.out.println("NEO4J_READY bolt://" + HOST + ":" + port);
        System.out.flush();

        if (watchStdin) {
            Thread t = new Thread(() -> {
                try { while (System.in.read() != -1) { /* drain */ } } catch (IOException ignored) { }
                System.exit(0);
            }, "neo4j-launcher-stdin");
            t.setDaemon(true);
            t.start();
        }
        stopped.await(); // released only by the shutdown hook (SIGTERM/SIGINT/System.exit)
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(HOST, 0));
            return s.getLocalPort();
        }
    }

    /** Waits until a Bolt handshake on HOST:port is answered with a non-zero version. */
    private static void waitForBolt(int port, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        byte[] hello = {
            0x60, 0x60, (byte) 0xB0, 0x17,  // Bolt magic preamble
            0, 8, 8, 5,  0, 0, 4, 4,  0, 0, 0, 0,  0, 0, 0, 0  // 5.0-5.8, 4.4
        };
        while (true) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(HOST, port), 2000);
                s.setSoTimeout(5000);
                OutputStream out = s.getOutputStream();
                out.write(hello);
                out.flush();
                InputStream in = s.getInputStream();
                int version = new DataInputStream(in).readInt();
                if (version != 0) return;
            } catch (IOException ignored) { }
            if (System.currentTimeMillis() > deadline) {
                System.err.println("neo4j-launcher: Bolt connector did not accept a handshake");
                System.exit(1);
            }
            Thread.sleep(200);
        }
    }

    private static void deleteTree(Path root) {
        try (Stream<Path> paths = Files.walk(root)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("neo4j-launcher: could not delete " + root + ": " + e);
        }
    }
}
