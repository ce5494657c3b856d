package hippocampus.neo4jserver;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.Map;

import org.neo4j.server.CommunityBootstrapper;
import org.neo4j.server.NeoBootstrapper;

/**
 * Starts Neo4j Community on loopback with its own bootstrapper, as the
 * distribution's {@code neo4j console} does: Bolt, the HTTP connector (which
 * serves the Browser when its jar is on the classpath), auth on, the vector
 * and full-text index providers of the kernel.
 *
 * <p>Usage: {@code Launcher HOME PASSWORD_FILE READY_FILE [BOLT_PORT [HTTP_PORT]]}.
 * The data and logs live under {@code HOME} and outlive a stop. The password
 * of the {@code neo4j} user is set from {@code PASSWORD_FILE} at every start.
 * A port of 0 (the default) is a free one chosen here. Once both connectors
 * listen and the password is set, {@code READY_FILE} is written (atomically)
 * with the Bolt and HTTP addresses, one per line. SIGTERM stops the server
 * cleanly (the bootstrapper's shutdown hook).
 *
 * <p>The page cache is {@code -Dneo4j.pagecache=SIZE} (default 512m); the heap
 * is the JVM's own {@code -Xmx}; {@code -Dneo4j.settings="name=value;..."} sets
 * any other setting.
 */
public final class Launcher {
    private static final String HOST = "127.0.0.1";

    private Launcher() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println(
                    "usage: Launcher HOME PASSWORD_FILE READY_FILE [BOLT_PORT [HTTP_PORT]]");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        String password = Files.readString(Path.of(args[1]), StandardCharsets.UTF_8).strip();
        Path ready = Path.of(args[2]).toAbsolutePath();
        int bolt = port(args, 3);
        int http = port(args, 4);
        // A ready file left by an earlier run must not be read as this one's.
        Files.deleteIfExists(ready);
        Files.createDirectories(home);

        Map<String, String> settings = new HashMap<>();
        settings.put("server.default_listen_address", HOST);
        settings.put("server.default_advertised_address", HOST);
        settings.put("server.bolt.enabled", "true");
        settings.put("server.bolt.listen_address", HOST + ":" + bolt);
        settings.put("server.http.enabled", "true");
        settings.put("server.http.listen_address", HOST + ":" + http);
        settings.put("server.http.advertised_address", HOST + ":" + http);
        settings.put("server.bolt.advertised_address", HOST + ":" + bolt);
        settings.put("server.https.enabled", "false");
        settings.put("dbms.security.auth_enabled", "true");
        settings.put("dbms.usage_report.enabled", "false");
        settings.put("server.memory.pagecache.size", System.getProperty("neo4j.pagecache", "512m"));
        // Transaction logs of a test server need not outlive a checkpoint or two.
        settings.put("db.tx_log.rotation.retention_policy", "2 files");
        // A vector index merges its segments 4 at a time, not 50: a search visits
        // every segment, and 100,000 memories written 2,000 at a time left 36 of
        // them (6 with 4), where recall spent twice the server's time.
        settings.put("internal.dbms.index.vector.standard_merge_factor", "4");
        // Further settings, "name=value;name=value" (-Dneo4j.settings), these last.
        for (String pair : System.getProperty("neo4j.settings", "").split(";")) {
            int eq = pair.indexOf('=');
            if (eq > 0) {
                settings.put(pair.substring(0, eq).strip(), pair.substring(eq + 1).strip());
            }
        }

        NeoBootstrapper server = new CommunityBootstrapper();
        int status = server.start(home, settings);
        if (status != NeoBootstrapper.OK) {
            System.err.println("Neo4j did not start (status " + status + "); see " + home.resolve("logs"));
            System.exit(status);
        }
        // The bootstrapper's own shutdown hook stops the server on SIGTERM.
        try {
            setPassword(server, password);
        } catch (RuntimeException e) {
            e.printStackTrace();
            server.stop();
            System.exit(1);
        }

        Path partial = ready.resolveSibling(ready.getFileName() + ".partial");
        Files.writeString(
                partial,
                "bolt://" + HOST + ":" + bolt + "\nhttp://" + HOST + ":" + http + "\n",
                StandardCharsets.UTF_8);
        Files.move(partial, ready, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        System.out.println("Neo4j ready: bolt://" + HOST + ":" + bolt + " http://" + HOST + ":" + http);
        Thread.currentThread().join();
    }

    /** Sets the {@code neo4j} user's password; already set (a restart) is fine. */
    private static void setPassword(NeoBootstrapper server, String password) {
        try {
            server.getDatabaseManagementService()
                    .database("system")
                    .executeTransactionally(
                            "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
                            Map.of("password", password));
        } catch (RuntimeException e) {
            if (!String.valueOf(rootCause(e).getMessage()).contains("cannot be the same")) {
                throw e;
            }
        }
    }

    private static Throwable rootCause(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }

    /** The port in {@code args[i]}, or a free one when absent or 0. */
    private static int port(String[] args, int i) throws IOException {
        int given = args.length > i ? Integer.parseInt(args[i]) : 0;
        if (given != 0) {
            return given;
        }
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST))) {
            return socket.getLocalPort();
        }
    }
}
