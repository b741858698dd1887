package instruments;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import play.libs.Json;

/**
 * The Play tests' check of the pools' timeline (PoolTimeline) as the lab driver reads it: started
 * and stopped over HTTP, a column per gauge, every column a value per sample.
 */
public final class TimelineCheck {
  private static final HttpClient client = HttpClient.newHttpClient();

  private TimelineCheck() {}

  /** Some work for the pools while the timeline samples them. */
  @FunctionalInterface
  public interface Load {
    void run() throws Exception;
  }

  private static HttpResponse<String> post(int port, String path) throws Exception {
    return client.send(
        HttpRequest.newBuilder(URI.create("http://localhost:" + port + path))
            .POST(HttpRequest.BodyPublishers.noBody())
            .build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /**
   * Refuses a rate out of range, then samples 100 times a second while `load` runs, and
   * answers the series: each of `gauges` (and the JVM's own columns) with a value per sample.
   */
  public static JsonNode record(int port, Load load, String... gauges) throws Exception {
    assertEquals(400, post(port, "/timeline/start?hz=0").statusCode());
    assertEquals(400, post(port, "/timeline/start?hz=101").statusCode());
    assertEquals(200, post(port, "/timeline/start?hz=100").statusCode());
    load.run();
    HttpResponse<String> stopped = post(port, "/timeline/stop");
    assertEquals(stopped.body(), 200, stopped.statusCode());
    JsonNode timeline = Json.parse(stopped.body());
    assertEquals(100, timeline.get("hz").asInt());
    assertEquals(0, timeline.get("dropped").asInt());
    JsonNode series = timeline.get("series");
    int samples = series.get("t_ms").size();
    assertTrue("samples: " + samples, samples >= 5);
    for (String name : new String[] {"cpu_ms", "jvm_threads", "jvm_threads_started"}) {
      assertEquals(name, samples, series.get(name).size());
    }
    for (String name : gauges) {
      assertTrue(name + ": no such column", series.has(name));
      assertEquals(name, samples, series.get(name).size());
    }
    return series;
  }

  /** The largest value of one column. */
  public static long max(JsonNode series, String name) {
    long max = Long.MIN_VALUE;
    for (JsonNode value : series.get(name)) {
      max = Math.max(max, value.asLong());
    }
    return max;
  }
}
