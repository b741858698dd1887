package controllers;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import instruments.PoolsSchema;
import instruments.TimelineCheck;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
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
public class ActionsTest {
  private static TestServer server;
  private static final HttpClient client = HttpClient.newHttpClient();

  @BeforeClass
  public static void startServer() {
    // Short work and a small pool keep the test quick and prove both are configurable.
    server =
        Helpers.testServer(
            0,
            new GuiceApplicationBuilder()
                .configure("lab.work-ms", 5)
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
            HttpRequest.newBuilder(URI.create("http://localhost:" + port + path)).build(),
            HttpResponse.BodyHandlers.ofString());
    assertEquals(path, 200, response.statusCode());
    return response.body();
  }

  @Test
  public void blockingActionsRunOnTheDefaultDispatcher() throws Exception {
    for (String path : new String[] {"/java/blocking", "/scala/blocking"}) {
      String body = body(path);
      assertTrue(path + ": " + body, body.contains("akka.actor.default-dispatcher"));
    }
  }

  @Test
  public void offloadedActionsRunOnTheirOwnPool() throws Exception {
    for (String path : new String[] {"/java/offloaded", "/scala/offloaded"}) {
      String body = body(path);
      assertTrue(path + ": " + body, body.contains("offload-dispatcher"));
    }
  }

  @Test
  public void poolsReportTheConfiguredSizes() throws Exception {
    JsonNode pools = Json.parse(body("/pools"));
    assertEquals(7, pools.at("/pools/offload/threads").asInt());
    assertEquals("thread-pool-executor", pools.at("/pools/offload/executor").asText());
    assertEquals(5, pools.at("/work_ms").asInt());
    // Akka's default: parallelism = clamp(cores * 1.0, 8, 64).
    int cores = Runtime.getRuntime().availableProcessors();
    int expected = Math.min(64, Math.max(8, cores));
    assertEquals(expected, pools.at("/pools/default/threads").asInt());
  }

  @Test
  public void poolsMatchTheDriversSchema() throws Exception {
    PoolsSchema.assertMatches(Json.parse(body("/pools")));
  }

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
        body("/java/offloaded");
      }
    }, "default.busy", "default.queued", "default.threads", "offload.busy", "offload.queued", "offload.threads");
    // One request at a time, 5 ms each on the offload pool: busy in most samples, never past its 7.
    assertTrue(TimelineCheck.max(series, "offload.busy") >= 1);
    assertTrue(TimelineCheck.max(series, "offload.threads") <= 7);
  }
}
