package controllers;

import static org.junit.Assert.fail;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import play.Application;
import play.inject.guice.GuiceApplicationBuilder;
import play.test.Helpers;
import play.test.TestServer;

/**
 * The tests run against a real PostgreSQL, never an in-memory stand-in: the
 * lesson is about what a real database does with the connections it is given.
 * `scripts/with-postgres` (or `scripts/test labs`) starts a throwaway one and
 * passes it in JDBC_DATABASE_URL / _USERNAME / _PASSWORD, which
 * application.conf reads.
 */
final class LabDatabase {
  private LabDatabase() {}

  static final HttpClient CLIENT = HttpClient.newHttpClient();

  static void requireDatabase() {
    if (System.getenv("JDBC_DATABASE_URL") == null) {
      fail(
          "These tests need a PostgreSQL database. From the lab's directory run\n"
              + "  ../../scripts/with-postgres ../../scripts/sbt test\n"
              + "(a throwaway cluster, removed afterwards), or set JDBC_DATABASE_URL,\n"
              + "JDBC_DATABASE_USERNAME and JDBC_DATABASE_PASSWORD yourself.");
    }
  }

  /**
   * A server with the lab's knobs set. application.conf's `${lab.pool-size}`
   * substitutions are resolved when the file is loaded (with -D system
   * properties on top, as the lab driver passes them), so a test sets the keys
   * they feed as well.
   */
  static TestServer server(int queryMs, int poolSize, int dispatcherSize, int timeoutMs) {
    return server(queryMs, poolSize, dispatcherSize, timeoutMs, Map.of());
  }

  /** The same, with more settings on top. */
  static TestServer server(
      int queryMs, int poolSize, int dispatcherSize, int timeoutMs, Map<String, Object> more) {
    requireDatabase();
    Application app =
        new GuiceApplicationBuilder()
            .configure(more)
            .configure("lab.query-ms", queryMs)
            .configure("db.default.hikaricp.maximumPoolSize", poolSize)
            .configure("db.default.hikaricp.minimumIdle", poolSize)
            .configure("db.default.hikaricp.connectionTimeout", timeoutMs + " ms")
            .configure("database.dispatcher.thread-pool-executor.fixed-pool-size", dispatcherSize)
            // Two copies of database.dispatcher, as the driver's default mode asks for them.
            .configure("lab.dispatcher-sizes", "2,7")
            .build();
    TestServer server = Helpers.testServer(0, app);
    server.start();
    return server;
  }

  static HttpResponse<String> get(TestServer server, String path) throws Exception {
    int port = server.getRunningHttpPort().getAsInt();
    return CLIENT.send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
