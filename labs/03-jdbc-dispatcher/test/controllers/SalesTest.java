package controllers;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import instruments.PoolsSchema;
import instruments.TimelineCheck;
import java.net.http.HttpResponse;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import play.db.Database;
import play.libs.Json;
import play.test.TestServer;

/** The JSON endpoint against a real PostgreSQL, through a real server (so threads are real too). */
public class SalesTest {
  private static final int QUERY_MS = 40;
  private static final int CONNECTION_TIMEOUT_MS = 4321;
  private static TestServer server;

  @BeforeClass
  public static void startServer() {
    // Small, odd sizes prove the configuration reaches HikariCP and the dispatcher. The timeout
    // is a cold start's: evolutions check the schema through the pool at start-up, and a first
    // connection on a busy machine took longer than 250 ms (ConnectionTimeoutTest).
    server =
        LabDatabase.server(QUERY_MS, 3, 5, CONNECTION_TIMEOUT_MS);
  }

  @AfterClass
  public static void stopServer() {
    if (server != null) {
      server.stop();
    }
  }

  private static JsonNode json(String path) throws Exception {
    HttpResponse<String> response = LabDatabase.get(server, path);
    assertEquals(path + ": " + response.body(), 200, response.statusCode());
    return Json.parse(response.body());
  }

  private static long count(String sql) {
    Database db = server.application().injector().instanceOf(Database.class);
    return db.withConnection(
        connection -> {
          try (var rows = connection.createStatement().executeQuery(sql)) {
            rows.next();
            return rows.getLong(1);
          }
        });
  }

  @Test
  public void evolutionsCreatedTheSchemaAndSeedData() {
    assertEquals(200, count("SELECT count(*) FROM products"));
    assertEquals(96000, count("SELECT count(*) FROM orders"));
  }

  @Test
  public void reportAddsUpTheRegionsOrders() throws Exception {
    JsonNode report = json("/sales?region=3");
    assertEquals(3, report.get("region").asInt());
    long orders = 0;
    double previousRevenue = Double.MAX_VALUE;
    for (JsonNode category : report.get("categories")) {
      orders += category.get("orders").asLong();
      double revenue = category.get("revenue").asDouble();
      assertTrue("sorted by revenue, highest first", revenue <= previousRevenue);
      previousRevenue = revenue;
    }
    assertTrue(report.get("categories").size() > 0);
    assertEquals(count("SELECT count(*) FROM orders WHERE region = 3"), orders);
  }

  @Test
  public void theDatabaseWaitIsRealAndVaries() throws Exception {
    // query-jitter is 0.5 by default: each wait is uniform in QUERY_MS x (1 +/- 0.5).
    double shortest = Double.MAX_VALUE, longest = 0, total = 0;
    int requests = 12;
    for (int i = 0; i < requests; i++) {
      long started = System.nanoTime();
      json("/sales?region=1");
      double elapsedMs = (System.nanoTime() - started) / 1e6;
      shortest = Math.min(shortest, elapsedMs);
      longest = Math.max(longest, elapsedMs);
      total += elapsedMs;
    }
    assertTrue("fastest took " + shortest + " ms, less than pg_sleep's least", shortest >= QUERY_MS * 0.5);
    assertTrue("mean " + total / requests + " ms, far below pg_sleep's mean", total / requests >= QUERY_MS * 0.75);
    // Twelve identical waits would all fall within a few ms of each other.
    assertTrue("waits did not vary: " + shortest + ".." + longest + " ms", longest - shortest >= QUERY_MS * 0.2);
  }

  @Test
  public void calibrateTimesTheQueryAlone() throws Exception {
    JsonNode calibration = json("/calibrate?runs=7");
    assertEquals(7, calibration.get("runs").asInt());
    double median = calibration.get("median_ms").asDouble();
    // Without pg_sleep: real work, but far less than the wait.
    assertTrue("median " + median + " ms", median > 0 && median < QUERY_MS);
    // It timed the queries only once the pool held all its connections (opening one costs PostgreSQL CPU).
    assertTrue(calibration.get("pool_fill_wait_ms").asLong() >= 0);
    JsonNode connections = json("/pools").get("pools").get("connections");
    assertEquals(
        connections.get("threads").asInt(),
        connections.get("active").asInt() + connections.get("idle").asInt());
    assertEquals(400, LabDatabase.get(server, "/calibrate?runs=0").statusCode());
  }

  @Test
  public void eachActionRunsOnItsDispatcher() throws Exception {
    assertTrue(json("/sales?region=2").get("thread").asText().contains("database.dispatcher"));
    assertTrue(
        json("/sales/default-dispatcher?region=2")
            .get("thread")
            .asText()
            .contains("akka.actor.default-dispatcher"));
  }

  @Test
  public void aSizedDispatcherRunsTheQueryOnItsOwnThreads() throws Exception {
    assertTrue(
        json("/sales/sized?region=2&threads=7").get("thread").asText().contains("database-dispatcher-7-threads"));
    assertTrue(
        json("/sales/sized?region=2&threads=2&jitter=0")
            .get("thread")
            .asText()
            .contains("database-dispatcher-2-threads"));
    // Only the sizes lab.dispatcher-sizes lists, and a jitter of at most 1.
    assertEquals(400, LabDatabase.get(server, "/sales/sized?region=2&threads=5").statusCode());
    assertEquals(400, LabDatabase.get(server, "/sales/sized?region=2&threads=7&jitter=2").statusCode());
    JsonNode pools = json("/pools");
    assertEquals(7, pools.at("/pools/database-7/threads").asInt());
    assertEquals(2, pools.at("/pools/database-2/threads").asInt());
    assertEquals("thread-pool-executor", pools.at("/pools/database-7/executor").asText());
    assertEquals(5, pools.at("/pools/database/threads").asInt());
  }

  @Test
  public void aRegionOutsideTheDataIsABadRequest() throws Exception {
    assertEquals(400, LabDatabase.get(server, "/sales?region=0").statusCode());
    assertEquals(400, LabDatabase.get(server, "/sales?region=17").statusCode());
    assertEquals(400, LabDatabase.get(server, "/sales?region=north").statusCode());
  }

  @Test
  public void poolsReportTheEffectiveSizesAndTheDatabase() throws Exception {
    JsonNode pools = json("/pools");
    assertEquals(5, pools.at("/pools/database/threads").asInt());
    assertEquals("thread-pool-executor", pools.at("/pools/database/executor").asText());
    assertEquals(3, pools.at("/pools/connections/threads").asInt());
    assertEquals(CONNECTION_TIMEOUT_MS, pools.at("/pools/connections/connection_timeout_ms").asInt());
    assertEquals(QUERY_MS, pools.get("query_ms").asInt());
    assertEquals(0.5, pools.get("query_jitter").asDouble(), 1e-9);
    assertTrue(pools.at("/postgresql/version").asText().startsWith("PostgreSQL"));
    assertTrue(pools.at("/postgresql/settings/max_connections").asInt() > 0);
    // Akka's default: parallelism = clamp(cores * 1.0, 8, 64).
    int cores = Runtime.getRuntime().availableProcessors();
    assertEquals(Math.min(64, Math.max(8, cores)), pools.at("/pools/default/threads").asInt());
  }

  @Test
  public void poolsMatchTheDriversSchema() throws Exception {
    PoolsSchema.assertMatches(json("/pools"));
  }

  @Test
  public void theTimelineSeesTheDatabasePoolsAtWork() throws Exception {
    int port = server.getRunningHttpPort().getAsInt();
    JsonNode series = TimelineCheck.record(port, () -> {
      long until = System.nanoTime() + 300_000_000L;
      while (System.nanoTime() < until) {
        json("/sales?region=2");
      }
    }, "default.busy", "database.busy", "database.queued", "database-2.busy", "database-7.threads",
        "connections.active", "connections.idle", "connections.awaiting");
    // One request at a time, on the database dispatcher holding a connection for its 40 ms.
    assertTrue(TimelineCheck.max(series, "database.busy") >= 1);
    assertTrue(TimelineCheck.max(series, "connections.active") >= 1);
    assertTrue(TimelineCheck.max(series, "connections.active") <= 3);
  }
}
