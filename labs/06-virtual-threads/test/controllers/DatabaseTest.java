package controllers;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
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
  private static TestServer server;

  @BeforeClass
  public static void startServer() {
    assumeTrue(
        "no PostgreSQL: the JDBC tests are skipped (run ./test-env ../../scripts/sbt test, which starts a"
            + " throwaway one)",
        System.getenv("JDBC_DATABASE_URL") != null);
    // One connection, given up on after 250 ms (HikariCP's least): a second query at
    // once cannot have it.
    server =
        Helpers.testServer(
            0,
            new GuiceApplicationBuilder()
                .configure("lab.query-ms", QUERY_MS)
                .configure("db.default.hikaricp.maximumPoolSize", 1)
                .configure("db.default.hikaricp.minimumIdle", 1)
                .configure("db.default.hikaricp.connectionTimeout", "250 ms")
                .build());
    server.start();
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
    assertTrue(calibration.toString(), mean < QUERY_MS * 1.5);
  }

  @Test
  public void waitingLongerThanTheConnectionTimeoutIsA503() throws Exception {
    List<CompletableFuture<HttpResponse<String>>> requests = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      requests.add(CompletableFuture.supplyAsync(() -> call("/jdbc/pool")));
    }
    int ok = 0;
    int unavailable = 0;
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

  private static HttpResponse<String> call(String path) {
    try {
      return LabServer.get(server, path);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
