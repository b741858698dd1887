package controllers;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import instruments.PoolsSchema;
import instruments.TimelineCheck;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.ForkJoinPool;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import play.inject.guice.GuiceApplicationBuilder;
import play.libs.Json;
import play.test.Helpers;
import play.test.TestServer;

/**
 * Runs the application behind a real server: which thread an action runs on
 * only shows when a request comes in through the server, not through
 * Helpers.route (which calls the action on the test's own thread).
 */
public class AsyncActionsTest {
  private static final int WORK_MS = 40;
  private static TestServer server;
  private static final HttpClient client = HttpClient.newHttpClient();

  @BeforeClass
  public static void startServer() {
    // A small pool proves the size is configurable; 40 ms of work is long
    // enough to time the downstream call, short enough to keep the test quick.
    server =
        Helpers.testServer(
            0,
            new GuiceApplicationBuilder()
                .configure("lab.work-ms", WORK_MS)
                .configure("offload-dispatcher.thread-pool-executor.fixed-pool-size", 7)
                .build());
    server.start();
  }

  @AfterClass
  public static void stopServer() {
    server.stop();
  }

  private static String body(String path) throws Exception {
    int port = server.getRunningHttpPort().getAsInt();
    HttpResponse<String> response =
        client.send(
            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(path + ": " + response.body(), 200, response.statusCode());
    return response.body();
  }

  private static void assertRanOn(String path, String threadName) throws Exception {
    String body = body(path);
    assertTrue(path + " should run on " + threadName + ", said: " + body, body.contains(threadName));
  }

  @Test
  public void blockingAndDefaultEcBothHoldTheDefaultDispatcher() throws Exception {
    assertRanOn("/blocking", "akka.actor.default-dispatcher");
    // supplyAsync(work, ClassLoaderExecutionContext.current()) looks async,
    // but current() is Play's default dispatcher: same pool as /blocking.
    assertRanOn("/default-ec", "akka.actor.default-dispatcher");
  }

  @Test
  public void customEcRunsTheWorkOnItsOwnPool() throws Exception {
    assertRanOn("/custom-ec", "offload-dispatcher");
  }

  @Test
  public void commonPoolVariantRunsWhereThePoolsReportSays() throws Exception {
    JsonNode commonPool = Json.parse(body("/pools")).at("/pools/commonpool");
    assertEquals(ForkJoinPool.getCommonPoolParallelism(), commonPool.at("/parallelism").asInt());
    String body = body("/commonpool");
    if (ForkJoinPool.getCommonPoolParallelism() > 1) {
      // Three or more cores: the JDK's shared pool, sized cores - 1.
      assertEquals("ForkJoinPool.commonPool()", commonPool.at("/executor").asText());
      assertTrue(body, body.contains("ForkJoinPool.commonPool-worker"));
    } else {
      // One or two cores: the JDK gives up on the pool and starts a thread per task.
      assertEquals("a new thread per task", commonPool.at("/executor").asText());
      assertTrue(commonPool.at("/threads").isNull());
      assertTrue(body, body.matches("done on Thread-\\d+\\n"));
    }
  }

  @Test
  public void wsWaitsForTheDownstreamWithoutAPool() throws Exception {
    long started = System.nanoTime();
    String body = body("/ws");
    long tookMs = (System.nanoTime() - started) / 1_000_000;
    assertEquals("downstream said slept without a thread\n", body);
    // The downstream answers after work-ms, never before.
    assertTrue("took " + tookMs + " ms", tookMs >= WORK_MS);
  }

  @Test
  public void poolsReportTheConfiguredSizes() throws Exception {
    JsonNode pools = Json.parse(body("/pools"));
    assertEquals(7, pools.at("/pools/offload/threads").asInt());
    assertEquals("thread-pool-executor", pools.at("/pools/offload/executor").asText());
    assertEquals(WORK_MS, pools.at("/work_ms").asInt());
    // Akka's default: parallelism = clamp(cores * 1.0, 8, 64).
    int cores = Runtime.getRuntime().availableProcessors();
    assertEquals(Math.min(64, Math.max(8, cores)), pools.at("/pools/default/threads").asInt());
  }

  @Test
  public void poolsMatchTheDriversSchema() throws Exception {
    PoolsSchema.assertMatches(Json.parse(body("/pools")));
  }

  // ANCHOR: classloader-test
  @Test
  public void aContinuationOnTheCommonPoolCannotSeeTheApplication() throws Exception {
    // In tests and in dev mode (sbt run) the application's classes live in a
    // class loader of their own. Common-pool threads carry the JVM's system
    // class loader instead, so a library that loads a class by name fails there.
    JsonNode bare = Json.parse(body("/classloader/commonpool"));
    assertTrue(bare.toString(), bare.at("/thread").asText().startsWith("ForkJoinPool.commonPool-worker"));
    assertFalse(bare.toString(), bare.at("/finds_application_classes").asBoolean());
    assertFalse(bare.toString(), bare.at("/is_application_class_loader").asBoolean());

    // The same pool, wrapped: ClassLoaderExecution carries the loader across.
    JsonNode wrapped = Json.parse(body("/classloader/commonpool-wrapped"));
    assertTrue(wrapped.toString(), wrapped.at("/thread").asText().startsWith("ForkJoinPool.commonPool-worker"));
    assertTrue(wrapped.toString(), wrapped.at("/finds_application_classes").asBoolean());
    assertTrue(wrapped.toString(), wrapped.at("/is_application_class_loader").asBoolean());

    // ClassLoaderExecutionContext.current(): Play's pool, Play's class loader.
    JsonNode play = Json.parse(body("/classloader/play"));
    assertTrue(play.toString(), play.at("/thread").asText().contains("akka.actor.default-dispatcher"));
    assertTrue(play.toString(), play.at("/is_application_class_loader").asBoolean());
  }
  // ANCHOR_END: classloader-test

  @Test
  public void statusAnswers() throws Exception {
    assertEquals("ok\n", body("/status"));
  }

  @Test
  public void theTimelineSeesTheOffloadPoolAtWork() throws Exception {
    int port = server.getRunningHttpPort().getAsInt();
    JsonNode series = TimelineCheck.record(port, () -> {
      long until = System.nanoTime() + 300_000_000L;
      while (System.nanoTime() < until) {
        body("/custom-ec");
      }
    }, "default.busy", "default.queued", "default.threads", "offload.busy", "offload.queued", "offload.threads");
    // One request at a time, on the offload pool for its whole 40 ms: busy in most samples.
    assertTrue(TimelineCheck.max(series, "offload.busy") >= 1);
  }
}
