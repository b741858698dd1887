package controllers;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.AfterClass;
import org.junit.BeforeClass;
import org.junit.Test;
import play.libs.Json;
import play.test.TestServer;

/**
 * More threads than connections: a request that cannot get a connection
 * within connectionTimeout fails with a 503 that says so, and is counted.
 */
public class ConnectionTimeoutTest {
  private static TestServer server;

  @BeforeClass
  public static void startServer() throws Exception {
    // The schema first, with a timeout a cold PostgreSQL meets: at start-up, evolutions check the
    // schema through the pool, and on a busy machine a first connection took longer than 250 ms
    // (a clean-clone CI run, with the container test beside it).
    LabDatabase.server(1000, 1, 4, 30_000).stop();
    // One connection, held 3 s per query (no jitter: with the lab's +/-50%, as little as 1.5 s);
    // four threads; give up after 250 ms. A request that arrives in the query's first 2,750 ms
    // cannot have the connection: the three requests start at once, but on a busy machine (the
    // suite's builds and a browser beside it) a thread may start most of a second late.
    server =
        LabDatabase.server(
            3000, 1, 4, 250, Map.of("play.evolutions.db.default.enabled", false, "lab.query-jitter", 0));
    // Until the pool holds its one connection (/pools queries PostgreSQL through it).
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (LabDatabase.get(server, "/pools").statusCode() != 200 && System.nanoTime() < deadline) {
      Thread.sleep(100);
    }
  }

  @AfterClass
  public static void stopServer() {
    if (server != null) {
      server.stop();
    }
  }

  @Test
  public void waitingLongerThanTheConnectionTimeoutIsA503() throws Exception {
    // Two at once, and one most of a second later, as a thread on a busy machine may start:
    // each arrives while the first query holds the only connection.
    List<CompletableFuture<HttpResponse<String>>> requests = List.of(after(0), after(0), after(800));
    int ok = 0;
    int unavailable = 0;
    for (CompletableFuture<HttpResponse<String>> request : requests) {
      HttpResponse<String> response = request.get();
      if (response.statusCode() == 200) {
        ok++;
      } else {
        assertEquals(response.body(), 503, response.statusCode());
        assertTrue(response.body(), response.body().contains("no database connection"));
        unavailable++;
      }
    }
    assertEquals("one request gets the only connection", 1, ok);
    assertEquals("the others give up after 250 ms", 2, unavailable);
    JsonNode pools = Json.parse(LabDatabase.get(server, "/pools").body());
    assertEquals(2, pools.at("/pools/connections/timeouts").asInt());
  }

  /** A query, sent `delayMs` from now. */
  private static CompletableFuture<HttpResponse<String>> after(long delayMs) {
    return CompletableFuture.supplyAsync(
        () -> call("/sales?region=1"), CompletableFuture.delayedExecutor(delayMs, TimeUnit.MILLISECONDS));
  }

  private static HttpResponse<String> call(String path) {
    try {
      return LabDatabase.get(server, path);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }
}
