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
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import play.inject.guice.GuiceApplicationBuilder;
import play.libs.Json;
import play.test.Helpers;
import play.test.TestServer;

/** The lab's endpoints behind a real server, with the lab's own payload files. */
public class EchoTest {
  private static TestServer server;
  private static final HttpClient client = HttpClient.newHttpClient();

  @BeforeClass
  public static void startServer() {
    // A short service time and a small pool keep the test quick and prove both are configurable.
    server =
        Helpers.testServer(
            0,
            new GuiceApplicationBuilder()
                .configure("lab.work-ms", 50)
                // The dispatcher's size is substituted from lab.pool-size when the config
                // file loads (or from -Dlab.pool-size); a test overrides the result.
                .configure("lanes-dispatcher.thread-pool-executor.fixed-pool-size", 3)
                .build());
    server.start();
  }

  @AfterClass
  public static void stopServer() {
    server.stop();
  }

  private static URI uri(String path) {
    return URI.create("http://localhost:" + server.getRunningHttpPort().getAsInt() + path);
  }

  private static HttpResponse<String> post(String path, String body, String contentType)
      throws Exception {
    return client.send(
        HttpRequest.newBuilder(uri(path))
            .header("Content-Type", contentType)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  private static String payload(String name) throws Exception {
    return Files.readString(Path.of("payloads", name));
  }

  @Test
  public void echoReturnsTheSameJson() throws Exception {
    for (String name : new String[] {"small.json", "large.json"}) {
      String sent = payload(name);
      HttpResponse<String> response = post("/echo", sent, "application/json");
      assertEquals(name, 200, response.statusCode());
      assertTrue(response.headers().firstValue("Content-Type").orElse("").startsWith("application/json"));
      assertEquals(name, Json.parse(sent), Json.parse(response.body()));
    }
  }

  @Test
  public void echoRejectsWhatIsNotJson() throws Exception {
    assertEquals(400, post("/echo", "{not json", "application/json").statusCode());
    assertEquals(415, post("/echo", "hello", "text/plain").statusCode());
  }

  @Test
  public void fixedEchoTakesAtLeastTheServiceTime() throws Exception {
    String sent = payload("small.json");
    long started = System.nanoTime();
    HttpResponse<String> response = post("/echo/fixed", sent, "application/json");
    long tookMs = (System.nanoTime() - started) / 1_000_000;
    assertEquals(200, response.statusCode());
    assertEquals(Json.parse(sent), Json.parse(response.body()));
    assertTrue("took " + tookMs + " ms", tookMs >= 50);
  }

  @Test
  public void poolsReportTheLanes() throws Exception {
    HttpResponse<String> response =
        client.send(HttpRequest.newBuilder(uri("/pools")).build(), HttpResponse.BodyHandlers.ofString());
    JsonNode pools = Json.parse(response.body());
    assertEquals(3, pools.at("/pools/lanes/threads").asInt());
    assertEquals("thread-pool-executor", pools.at("/pools/lanes/executor").asText());
    assertEquals(50, pools.at("/work_ms").asInt());
  }

  @Test
  public void poolsMatchTheDriversSchema() throws Exception {
    HttpResponse<String> response =
        client.send(HttpRequest.newBuilder(uri("/pools")).build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, response.statusCode());
    PoolsSchema.assertMatches(Json.parse(response.body()));
  }

  @Test
  public void theTimelineSeesTheLanesAtWork() throws Exception {
    JsonNode series = TimelineCheck.record(server.getRunningHttpPort().getAsInt(), () -> {
      long until = System.nanoTime() + 300_000_000L;
      while (System.nanoTime() < until) {
        assertEquals(200, post("/echo/fixed", "{}", "application/json").statusCode());
      }
    }, "default.busy", "default.queued", "lanes.busy", "lanes.queued", "lanes.threads");
    // One request at a time, 50 ms on a lane: busy in most samples, never past the 3 lanes.
    assertTrue(TimelineCheck.max(series, "lanes.busy") >= 1);
    assertTrue(TimelineCheck.max(series, "lanes.threads") <= 3);
  }
}
