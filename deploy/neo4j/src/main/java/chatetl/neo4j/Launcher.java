package chatetl.neo4j;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.GraphDatabaseService;
import org.neo4j.logging.Level;
import org.neo4j.logging.log4j.Log4jLogProvider;

/**
 * Runs Neo4j Community (embedded DBMS) with its Bolt connector, for chatetl's local
 * development, demos and CI. Same engine and Bolt protocol as the server: clients
 * use the ordinary Neo4j drivers on bolt://HOST:PORT with user neo4j.
 *
 * <pre>
 * NEO4J_PASSWORD=secret java -Xmx1g -jar chatetl-neo4j-launcher.jar \
 *     --home DIR [--host 127.0.0.1] [--port 7687] [--page-cache 256m] [--database neo4j]
 * </pre>
 *
 * Every option also has an environment variable (CHATETL_NEO4J_HOME, CHATETL_NEO4J_HOST,
 * CHATETL_NEO4J_PORT, CHATETL_NEO4J_PAGE_CACHE, NEO4J_DATABASE); the password comes
 * only from NEO4J_PASSWORD, so it never shows in a process list. On every start the
 * password of user neo4j is (re)set to it, through the system database.
 *
 * Prints "neo4j ready bolt://HOST:PORT" once the database is available and the password
 * is set; closes the DBMS cleanly on SIGTERM/SIGINT (shutdown hook).
 */
public final class Launcher {

    private Launcher() {
    }

    public static void main(String[] args) throws Exception {
        String home = env("CHATETL_NEO4J_HOME", null);
        String host = env("CHATETL_NEO4J_HOST", "127.0.0.1");
        String port = env("CHATETL_NEO4J_PORT", "7687");
        String pageCache = env("CHATETL_NEO4J_PAGE_CACHE", "256m");
        String database = env("NEO4J_DATABASE", "neo4j");

        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) {
                usage(System.out);
                return;
            }
            if (i + 1 >= args.length) {
                die("missing value for " + a);
            }
            String v = args[++i];
            switch (a) {
                case "--home" -> home = v;
                case "--host" -> host = v;
                case "--port" -> port = v;
                case "--page-cache" -> pageCache = v;
                case "--database" -> database = v;
                default -> die("unknown option " + a);
            }
        }
        if (home == null || home.isBlank()) {
            die("--home DIR (or CHATETL_NEO4J_HOME) is required");
        }
        String password = System.getenv("NEO4J_PASSWORD");
        if (password == null || password.isEmpty()) {
            die("set NEO4J_PASSWORD in the environment");
        }
        int portNumber;
        try {
            portNumber = Integer.parseInt(port);
        } catch (NumberFormatException e) {
            die("bad port: " + port);
            return;
        }

        Path homeDir = Path.of(home).toAbsolutePath();
        Files.createDirectories(homeDir);
        SocketAddress bolt = new SocketAddress(host, portNumber);

        long t0 = System.nanoTime();
        DatabaseManagementService dbms;
        try {
            dbms = new DatabaseManagementServiceBuilder(homeDir)
                    .setUserLogProvider(new Log4jLogProvider(System.out, Level.INFO))
                    // Bolt only: the embedded DBMS has no HTTP/HTTPS connector at all.
                    .setConfig(BoltConnector.enabled, true)
                    .setConfig(BoltConnector.listen_address, bolt)
                    .setConfig(BoltConnector.advertised_address, bolt)
                    .setConfig(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED)
                    .setConfig(BoltConnector.server_bolt_telemetry_enabled, false)
                    .setConfig(GraphDatabaseSettings.auth_enabled, true)
                    .setConfig(GraphDatabaseSettings.initial_default_database, database)
                    // Bounded memory: the JVM heap is set by the caller (-Xmx), the page cache here.
                    .setConfig(GraphDatabaseSettings.pagecache_memory, parseBytes(pageCache))
                    // Small transaction logs: keep two 32 MiB files, no preallocation.
                    .setConfig(GraphDatabaseSettings.keep_logical_logs, "2 files")
                    .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, 32L * 1024 * 1024)
                    .setConfig(GraphDatabaseSettings.preallocate_logical_logs, false)
                    .setConfig(GraphDatabaseSettings.udc_enabled, false)
                    // Bolt waits 5 s + 5 s for connections/threads on shutdown by default; the
                    // databases are already closed by then, so a quick exit loses nothing.
                    .setConfig(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1))
                    .setConfig(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1))
                    .build();
        } catch (Throwable e) {
            System.err.println("neo4j failed to start: " + e);
            Throwable c = e.getCause();
            while (c != null) {
                System.err.println("  caused by: " + c);
                c = c.getCause();
            }
            System.exit(1);
            return;
        }

        CountDownLatch stopped = new CountDownLatch(1);
        final DatabaseManagementService service = dbms;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("neo4j stopping");
            System.out.flush();
            try {
                service.shutdown();
                System.out.println("neo4j stopped");
            } catch (Throwable e) {
                System.err.println("neo4j shutdown failed: " + e);
            } finally {
                System.out.flush();
                stopped.countDown();
            }
        }, "chatetl-neo4j-shutdown"));

        try {
            GraphDatabaseService system = dbms.database(GraphDatabaseSettings.SYSTEM_DATABASE_NAME);
            setPassword(system, password);
            GraphDatabaseService db = dbms.database(database);
            if (!db.isAvailable(Duration.ofMinutes(5).toMillis())) {
                die("database " + database + " did not become available");
            }
            String version = system.executeTransactionally(
                    "CALL dbms.components() YIELD name, versions, edition "
                            + "RETURN name + ' ' + versions[0] + ' ' + edition AS v",
                    Map.of(),
                    r -> r.hasNext() ? String.valueOf(r.next().get("v")) : "?");
            System.out.printf("neo4j ready bolt://%s:%d (%s, home %s, started in %.1f s)%n",
                    host, portNumber, version, homeDir, (System.nanoTime() - t0) / 1e9);
            System.out.flush();
        } catch (Throwable e) {
            System.err.println("neo4j failed to start: " + e);
            System.exit(1); // runs the shutdown hook
        }

        // Block until the shutdown hook has closed the DBMS.
        while (!stopped.await(1, TimeUnit.HOURS)) {
            // keep running
        }
    }

    /** Sets neo4j's password; "the same as before" is not an error. */
    private static void setPassword(GraphDatabaseService system, String password) {
        try {
            system.executeTransactionally(
                    "ALTER USER neo4j SET PASSWORD $pw CHANGE NOT REQUIRED", Map.of("pw", password));
            System.out.println("neo4j password set for user neo4j");
        } catch (RuntimeException e) {
            String m = String.valueOf(e.getMessage()) + " " + String.valueOf(e.getCause());
            if (m.contains("cannot be the same")) {
                System.out.println("neo4j password for user neo4j already set");
                return;
            }
            throw e;
        }
    }

    private static long parseBytes(String s) {
        String t = s.trim().toLowerCase();
        long mult = 1;
        if (t.endsWith("b")) {
            t = t.substring(0, t.length() - 1);
        }
        if (t.endsWith("k")) {
            mult = 1024L;
        } else if (t.endsWith("m")) {
            mult = 1024L * 1024;
        } else if (t.endsWith("g")) {
            mult = 1024L * 1024 * 1024;
        }
        if (mult != 1) {
            t = t.substring(0, t.length() - 1);
        }
        try {
            return Long.parseLong(t.trim()) * mult;
        } catch (NumberFormatException e) {
            die("bad size: " + s);
            return 0;
        }
    }

    private static String env(String name, String dflt) {
        String v = System.getenv(name);
        return v == null || v.isEmpty() ? dflt : v;
    }

    private static void usage(PrintStream out) {
        out.println("usage: NEO4J_PASSWORD=... java -Xmx1g -jar chatetl-neo4j-launcher.jar --home DIR"
                + " [--host 127.0.0.1] [--port 7687] [--page-cache 256m] [--database neo4j]");
    }

    private static void die(String message) {
        System.err.println("neo4j launcher: " + message);
        usage(System.err);
        System.exit(2);
    }
}
