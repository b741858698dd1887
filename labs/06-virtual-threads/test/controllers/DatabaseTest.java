package controllers;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import instruments.PoolsSchema;
import instruments.TimelineCheck;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import play.inject.guice.GuiceApplicationBuilder;
import play.libs.Json;
import play.test.Helpers;
import play.test.TestServer;

/**
 * The JDBC endpoints against a real PostgreSQL, which ./test-env (scripts/with-postgres)
 * starts and hands over in JDBC_DATABASE_URL / _USERNAME / _PASSWORD. Without it these
 * tests are skipped, saying so: `../../scripts/sbt test` alone checks the rest.
 */
public class DatabaseTest {
  private static final int QUERY_MS = 300;
  // The timeout test's query: a request that arrives while it runs gives up after 250 ms if it
  // arrives in its first 3,000 - 250 ms. The three requests start at once, but on a busy machine
  // (the suite's builds and a browser beside it) a thread may start most of a second late, and
  // with a shorter query it then found the connection free.
  private static final int LONG_QUERY_MS = 3000;
  private static TestServer server;

  @BeforeClass
  public static void startServer() throws Exception {
    assumeTrue(
        "no PostgreSQL: the JDBC tests are skipped (run ./test-env ../../scripts/sbt test, which starts a"
            + " throwaway one)",
        System.getenv("JDBC_DATABASE_URL") != null);
    server = oneConnectionServer(QUERY_MS);
    server.start();
    awaitTheConnection(server);
  }

  /**
   * Until a query gets the pool's one connection. Play starts HikariCP's pool empty
   * (initializationFailTimeout = -1, Play's reference.conf), so the first query waits for the
   * connection to be opened, which on a busy machine took longer than the 250 ms timeout: a 503.
   * HikariCP goes on opening it, and a later query finds it.
   */
  private static void awaitTheConnection(TestServer target) throws Exception {
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (LabServer.get(target, "/jdbc/pool").statusCode() != 200) {
      assertTrue("no database connection within 30 s", System.nanoTime() < deadline);
      Thread.sleep(100);
    }
  }

  /** One connection, given up on after 250 ms (HikariCP's least): a second query at once cannot have it. */
  private static TestServer oneConnectionServer(int queryMs) {
    return Helpers.testServer(
        0,
        new GuiceApplicationBuilder()
            .configure("lab.query-ms", queryMs)
            .configure("db.default.hikaricp.maximumPoolSize", 1)
            .configure("db.default.hikaricp.minimumIdle", 1)
            .configure("db.default.hikaricp.connectionTimeout", "250 ms")
            .build());
  }

  @AfterClass
  public static void stopServer() {
    if (server != null) {
      server.stop();
    }
  }

  @Test
  public void theQueryWaitsInPostgresqlOnTheChosenThread() throws Exception {
    long started = System.nanoTime();
    HttpResponse<String> onPool = LabServer.get(server, "/jdbc/pool");
    double elapsedMs = (System.nanoTime() - started) / 1e6;
    assertEquals(onPool.body(), 200, onPool.statusCode());
    assertTrue(onPool.body(), onPool.body().contains("offload-dispatcher"));
    assertTrue("answered in " + elapsedMs + " ms, before pg_sleep's " + QUERY_MS, elapsedMs >= QUERY_MS);

    HttpResponse<String> onVirtual = LabServer.get(server, "/jdbc/virtual");
    if (LabServer.VIRTUAL_THREADS) {
      assertEquals(onVirtual.body(), 200, onVirtual.statusCode());
      assertTrue(onVirtual.body(), onVirtual.body().startsWith("done on VirtualThread["));
    } else {
      assertEquals(onVirtual.body(), 501, onVirtual.statusCode());
    }
  }

  @Test
  public void calibrateTimesTheQueryAlone() throws Exception {
    HttpResponse<String> response = LabServer.get(server, "/calibrate?runs=3");
    assertEquals(response.body(), 200, response.statusCode());
    JsonNode calibration = Json.parse(response.body());
    assertEquals(3, calibration.get("runs").asInt());
    assertEquals(3, calibration.get("warmup_runs").asInt());
    double min = calibration.get("min_ms").asDouble();
    double mean = calibration.get("mean_ms").asDouble();
    double max = calibration.get("max_ms").asDouble();
    assertTrue(calibration.toString(), QUERY_MS <= min && min <= mean && mean <= max);
    // One query per run, not two: the fastest run, which a busy machine delays least.
    assertTrue(calibration.toString(), min < QUERY_MS * 2);
  }

  @Test
  public void waitingLongerThanTheConnectionTimeoutIsA503() throws Exception {
    TestServer slow = oneConnectionServer(LONG_QUERY_MS);
    slow.start();
    try {
      awaitTheConnection(slow);
      int ok = 0;
      int unavailable = 0;
      // Two at once, and one most of a second later, as a thread on a busy machine may start:
      // each arrives while the first query holds the only connection.
      List<CompletableFuture<HttpResponse<String>>> requests =
          List.of(after(slow, 0), after(slow, 0), after(slow, 800));
      for (CompletableFuture<HttpResponse<String>> request : requests) {
        HttpResponse<String> response = request.get();
        if (response.statusCode() == 200) {
          ok++;
        } else {
          assertEquals(response.body(), 503, response.statusCode());
          assertTrue(response.body(), response.body().startsWith("no database connection"));
          unavailable++;
        }
      }
      assertEquals("one request gets the only connection", 1, ok);
      assertEquals("the others give up after 250 ms", 2, unavailable);
    } finally {
      slow.stop();
    }
  }

  @Test
  public void theConnectionsCanBeResizedWhileTheServerRuns() throws Exception {
    TestServer resized = oneConnectionServer(QUERY_MS);
    resized.start();
    try {
      awaitTheConnection(resized);
      assertEquals(200, LabServer.post(resized, "/connections?size=3").statusCode());
      assertEquals(3, connections(resized));
      // Three queries at once all get a connection: with one, the second would give up after
      // 250 ms, before the first's 300 ms were over. The pool opens the new connections as
      // queries wait for them; on a busy machine that may take a few tries.
      long deadline = System.nanoTime() + 30_000_000_000L;
      while (!atOnce(resized, 3).stream().allMatch(response -> response.statusCode() == 200)) {
        assertTrue("three queries never all got a connection within 30 s", System.nanoTime() < deadline);
      }
      assertEquals(200, LabServer.post(resized, "/connections?size=1").statusCode());
      assertEquals(1, connections(resized));
      awaitTheConnection(resized);
    } finally {
      resized.stop();
    }
  }

  @Test
  public void poolsSayThereIsADatabase() throws Exception {
    JsonNode pools = Json.parse(LabServer.get(server, "/pools").body());
    assertTrue(pools.get("database_configured").asBoolean());
    assertEquals(1, pools.at("/pools/connections/threads").asInt());
    assertEquals(250, pools.at("/pools/connections/connection_timeout_ms").asInt());
    assertEquals(QUERY_MS, pools.get("query_ms").asInt());
    PoolsSchema.assertMatches(pools);
  }

  @Test
  public void theTimelineSeesTheConnectionAtWork() throws Exception {
    JsonNode series = TimelineCheck.record(server.getRunningHttpPort().getAsInt(), () -> {
      long until = System.nanoTime() + 300_000_000L;
      while (System.nanoTime() < until) {
        assertEquals(200, call("/jdbc/pool").statusCode());
      }
    }, "pool.busy", "connections.active", "connections.idle", "connections.awaiting");
    // One request at a time holds the only connection for most of its time.
    assertEquals(1, TimelineCheck.max(series, "connections.active"));
  }

  /** `n` queries on the pool at once: their answers, once all have come. */
  private static List<HttpResponse<String>> atOnce(TestServer target, int n) throws Exception {
    List<CompletableFuture<HttpResponse<String>>> requests = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      requests.add(CompletableFuture.supplyAsync(() -> call(target, "/jdbc/pool")));
    }
    List<HttpResponse<String>> answers = new ArrayList<>();
    for (CompletableFuture<HttpResponse<String>> request : requests) {
      answers.add(request.get());
    }
    return answers;
  }

  /** A query on the pool, sent `delayMs` from now. */
  private static CompletableFuture<HttpResponse<String>> after(TestServer target, long delayMs) {
    return CompletableFuture.supplyAsync(
        () -> call(target, "/jdbc/pool"), CompletableFuture.delayedExecutor(delayMs, TimeUnit.MILLISECONDS));
  }

  /** The pool's size as the server's /pools reports it. */
  private static int connections(TestServer target) throws Exception {
    return Json.parse(LabServer.get(target, "/pools").body()).at("/pools/connections/threads").asInt();
  }

  private static HttpResponse<String> call(String path) {
    return call(server, path);
  }

  private static HttpResponse<String> call(TestServer target, String path) {
    try {
      return LabServer.get(target, path);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
