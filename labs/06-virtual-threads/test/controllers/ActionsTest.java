package controllers;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import instruments.PoolsSchema;
import instruments.TimelineCheck;
import java.net.http.HttpResponse;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import play.api.Configuration;
import play.inject.guice.GuiceApplicationBuilder;
import play.libs.Json;
import play.test.Helpers;
import play.test.TestServer;

/**
 * Every endpoint through a real server (which thread an action runs on only shows when
 * a request comes in through the server), without a database even when one is at hand
 * (./test-env): the JDBC endpoints must then answer 503. The virtual-thread endpoints
 * succeed on Java 21 or later, and on an older JVM say that they need it.
 */
public class ActionsTest {
  private static TestServer server;

  @BeforeClass
  public static void startServer() {
    // Short work and small pools keep the test quick and prove that each is configurable.
    server =
        Helpers.testServer(
            0,
            new GuiceApplicationBuilder()
                .withConfigLoader(
                    environment -> Configuration.load(environment.asScala()).underlying().withoutPath("db.default.url"))
                .configure("lab.work-ms", 5)
                .configure("offload-dispatcher.thread-pool-executor.fixed-pool-size", 7)
                .configure("per-request-dispatcher.thread-pool-executor.fixed-pool-size", 11)
                .configure("db.default.hikaricp.maximumPoolSize", 3)
                .build());
    server.start();
  }

  @AfterClass
  public static void stopServer() {
    server.stop();
  }

  private static String body(String path) throws Exception {
    HttpResponse<String> response = LabServer.get(server, path);
    assertEquals(path + ": " + response.body(), 200, response.statusCode());
    return response.body();
  }

  @Test
  public void theTimelineSeesThePoolAtWorkAndNoDatabase() throws Exception {
    JsonNode series = TimelineCheck.record(server.getRunningHttpPort().getAsInt(), () -> {
      long until = System.nanoTime() + 300_000_000L;
      while (System.nanoTime() < until) {
        body("/blocking/pool");
      }
    }, "default.busy", "pool.busy", "pool.queued", "pool.threads");
    assertTrue(TimelineCheck.max(series, "pool.busy") >= 1);
    assertFalse(series.has("connections.active"));
  }

  @Test
  public void statusAnswers() throws Exception {
    assertEquals("ok\n", body("/status"));
  }

  @Test
  public void blockingRunsOnTheDefaultDispatcherOrThePool() throws Exception {
    String onDefault = body("/blocking/default");
    assertTrue(onDefault, onDefault.contains("akka.actor.default-dispatcher"));
    String onPool = body("/blocking/pool");
    assertTrue(onPool, onPool.contains("offload-dispatcher"));
    String onPerRequestPool = body("/blocking/per-request-pool");
    assertTrue(onPerRequestPool, onPerRequestPool.contains("per-request-dispatcher"));
  }

  @Test
  public void virtualEndpointsRunOnVirtualThreadsOrSayWhatTheyNeed() throws Exception {
    for (String path : new String[] {"/blocking/virtual", "/blocking/virtual-synchronized", "/scala/virtual"}) {
      // Twice: the first request also creates the executor.
      for (int i = 0; i < 2; i++) {
        HttpResponse<String> response = LabServer.get(server, path);
        if (LabServer.VIRTUAL_THREADS) {
          assertEquals(path + ": " + response.body(), 200, response.statusCode());
          assertTrue(path + ": " + response.body(), response.body().startsWith("done on VirtualThread["));
        } else {
          assertEquals(path + ": " + response.body(), 501, response.statusCode());
          assertTrue(response.body(), response.body().contains("virtual threads need Java 21 or later"));
          assertTrue(response.body(), response.body().contains("this JVM is Java " + LabServer.JAVA));
        }
      }
    }
  }

  @Test
  public void jdbcEndpointsWithoutADatabaseSaySo() throws Exception {
    for (String path : new String[] {"/jdbc/virtual", "/jdbc/pool", "/calibrate?runs=5"}) {
      HttpResponse<String> response = LabServer.get(server, path);
      assertEquals(path + ": " + response.body(), 503, response.statusCode());
      assertTrue(response.body(), response.body().startsWith("no database: this server was started without one"));
      assertTrue(response.body(), response.body().contains("scripts/with-postgres"));
    }
  }

  @Test
  public void resizingTheConnectionsWithoutADatabaseSaysSo() throws Exception {
    HttpResponse<String> response = LabServer.post(server, "/connections?size=4");
    assertEquals(response.body(), 503, response.statusCode());
    assertTrue(response.body(), response.body().startsWith("no database: this server was started without one"));
    for (String size : new String[] {"0", "101", "many"}) {
      assertEquals("size=" + size, 400, LabServer.post(server, "/connections?size=" + size).statusCode());
    }
  }

  @Test
  public void calibrateRefusesABadNumberOfRuns() throws Exception {
    for (String runs : new String[] {"0", "-1", "1001", "many"}) {
      assertEquals("runs=" + runs, 400, LabServer.get(server, "/calibrate?runs=" + runs).statusCode());
    }
  }

  @Test
  public void poolsReportTheConfiguredSizesAndTheJvm() throws Exception {
    JsonNode pools = Json.parse(body("/pools"));
    assertEquals(7, pools.at("/pools/pool/threads").asInt());
    assertEquals("thread-pool-executor", pools.at("/pools/pool/executor").asText());
    assertEquals(11, pools.at("/pools/per-request/threads").asInt());
    // Akka's default: parallelism = clamp(cores * 1.0, 8, 64).
    int cores = Runtime.getRuntime().availableProcessors();
    assertEquals(Math.min(64, Math.max(8, cores)), pools.at("/pools/default/threads").asInt());
    assertTrue(pools.at("/pools/virtual/threads").isNull());
    assertEquals("virtual-dispatcher", pools.at("/pools/virtual/dispatcher").asText());
    assertEquals("virtual-thread-per-task", pools.at("/pools/virtual/executor").asText());
    assertEquals(3, pools.at("/pools/connections/threads").asInt());
    assertEquals(10000, pools.at("/pools/connections/connection_timeout_ms").asInt());
    assertEquals(LabServer.JAVA, pools.get("java_version").asInt());
    assertEquals(System.getProperty("java.runtime.version"), pools.get("java_runtime_version").asText());
    assertEquals(LabServer.VIRTUAL_THREADS, pools.get("virtual_threads").asBoolean());
    // Nothing sets jdk.virtualThreadScheduler.*: one carrier per core.
    assertEquals(cores, pools.get("carriers").asInt());
    assertEquals(cores, pools.at("/pools/carriers/threads").asInt());
    assertEquals(5, pools.get("work_ms").asInt());
    assertEquals(20, pools.get("query_ms").asInt());
    assertFalse(pools.get("database_configured").asBoolean());
    assertTrue(pools.get("jvm_threads").asInt() > 0);
  }

  @Test
  public void poolsMatchTheDriversSchema() throws Exception {
    PoolsSchema.assertMatches(Json.parse(body("/pools")));
  }
}
