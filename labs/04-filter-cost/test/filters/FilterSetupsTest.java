package filters;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import com.fasterxml.jackson.databind.JsonNode;
import instruments.PoolsSchema;
import instruments.TimelineCheck;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.function.Consumer;
import org.junit.Test;
import play.Application;
import play.inject.guice.GuiceApplicationBuilder;
import play.libs.Json;
import play.test.Helpers;
import play.test.TestServer;

/**
 * Every filter set-up the lab measures, started behind a real server and shown
 * to be the one really applied: by the headers and behaviour of Play's own
 * filters, and by the request counters of the lab's filters. A benchmark that
 * selected a set-up Play ignored would fail here first.
 */
public class FilterSetupsTest {
  private static final HttpClient client = HttpClient.newHttpClient();
  private static final int CHAIN = 3;

  /** A running server with the given set-up, for the length of `body`. */
  private static void withSetup(String setup, Consumer<Integer> body) {
    Application app =
        new GuiceApplicationBuilder()
            .configure("lab.filters", setup)
            .configure("lab.chain-length", CHAIN)
            .build();
    TestServer server = Helpers.testServer(0, app);
    server.start();
    try {
      body.accept(server.getRunningHttpPort().getAsInt());
    } finally {
      server.stop();
    }
  }

  private static HttpResponse<String> send(HttpRequest request) {
    try {
      return client.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (Exception e) {
      throw new AssertionError(request.uri() + ": " + e, e);
    }
  }

  private static HttpResponse<String> get(int port, String path) {
    return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build());
  }

  /**
   * A form POST carrying a cookie and no CSRF token: what the CSRF filter exists to stop. Its body
   * is empty: the filter answers 403 from the headers alone, before reading a body, and the server
   * then closes the connection (an early response); closing a socket with unread bytes sends a
   * reset, which can reach the client before the 403 does.
   */
  private static HttpResponse<String> formPostWithoutToken(int port) {
    return send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/status"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Cookie", "session=abc")
            .POST(HttpRequest.BodyPublishers.noBody())
            .build());
  }

  private static JsonNode filters(int port) {
    HttpResponse<String> response = get(port, "/filters");
    assertEquals(200, response.statusCode());
    return Json.parse(response.body());
  }

  /** N filters of the expected class, each of which ran once per /status request. */
  private static void assertCountedChain(String setup, Class<?> filterClass, int length) {
    withSetup(
        setup,
        port -> {
          JsonNode before = filters(port);
          assertEquals(setup, before.get("setup").asText());
          assertEquals(length, before.get("filters").size());
          for (JsonNode filter : before.get("filters")) {
            assertEquals(filterClass.getName(), filter.get("class").asText());
          }
          for (int i = 0; i < 5; i++) {
            assertEquals(200, get(port, "/status").statusCode());
          }
          JsonNode after = filters(port);
          for (int i = 0; i < length; i++) {
            long ran =
                after.at("/filters/" + i + "/calls").asLong()
                    - before.at("/filters/" + i + "/calls").asLong();
            // 5 /status requests plus the /filters request that read `before`.
            assertEquals(setup + " filter " + i, 6, ran);
          }
        });
  }

  @Test
  public void noneAppliesNoFilterAtAll() {
    withSetup(
        "none",
        port -> {
          assertEquals(0, filters(port).get("filters").size());
          HttpResponse<String> response = get(port, "/status");
          assertEquals("ok\n", response.body());
          assertFalse(response.headers().firstValue("X-Frame-Options").isPresent());
          // Nothing checks the token: the forged form post goes through.
          assertEquals(200, formPostWithoutToken(port).statusCode());
        });
  }

  @Test
  public void playDefaultsAddSecurityHeadersAndStopForgedPosts() {
    withSetup(
        "play-defaults",
        port -> {
          JsonNode chain = filters(port).get("filters");
          assertEquals(3, chain.size());
          HttpResponse<String> response = get(port, "/status");
          assertEquals(200, response.statusCode());
          assertEquals("DENY", response.headers().firstValue("X-Frame-Options").orElse(null));
          assertEquals("nosniff", response.headers().firstValue("X-Content-Type-Options").orElse(null));
          assertEquals(403, formPostWithoutToken(port).statusCode());
          assertTrue(chain.get(0).get("calls").isNull());
        });
  }

  @Test
  public void playDefaultsWithoutCsrfKeepTheOtherTwo() {
    // The driver's play-defaults-no-csrf variant: the same set-up, minus one filter by name.
    Application app =
        new GuiceApplicationBuilder()
            .configure("lab.filters", "play-defaults")
            .configure("play.filters.disabled.0", "play.filters.csrf.CSRFFilter")
            .build();
    TestServer server = Helpers.testServer(0, app);
    server.start();
    try {
      int port = server.getRunningHttpPort().getAsInt();
      JsonNode chain = filters(port).get("filters");
      assertEquals(2, chain.size());
      for (JsonNode filter : chain) {
        assertFalse(filter.toString(), filter.get("class").asText().contains("CSRF"));
      }
      assertEquals("DENY", get(port, "/status").headers().firstValue("X-Frame-Options").orElse(null));
      assertEquals(200, formPostWithoutToken(port).statusCode());
      String status = RawHttp.statusLine(port, "GET /status HTTP/1.1\r\nHost: evil.example\r\n");
      assertTrue(status, status.contains(" 400 "));
    } finally {
      server.stop();
    }
  }

  @Test
  public void playDefaultsRejectUnknownHosts() {
    withSetup(
        "play-defaults",
        port -> {
          // java.net.http refuses to set Host itself; a raw socket can.
          String status = RawHttp.statusLine(port, "GET /status HTTP/1.1\r\nHost: evil.example\r\n");
          assertTrue(status, status.contains(" 400 "));
          String allowed = RawHttp.statusLine(port, "GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n");
          assertTrue(allowed, allowed.contains(" 200 "));
        });
  }

  @Test
  public void noneAcceptsAnyHost() {
    withSetup(
        "none",
        port -> {
          String status = RawHttp.statusLine(port, "GET /status HTTP/1.1\r\nHost: evil.example\r\n");
          assertTrue(status, status.contains(" 200 "));
        });
  }

  @Test
  public void scalaPlainFiltersAllRun() {
    assertCountedChain("plain", NoopPlainFilter.class, CHAIN);
  }

  @Test
  public void scalaEssentialFiltersAllRun() {
    assertCountedChain("essential", NoopEssentialFilter.class, CHAIN);
  }

  @Test
  public void javaPlainFiltersAllRun() {
    assertCountedChain("java-plain", JavaNoopPlainFilter.class, CHAIN);
  }

  @Test
  public void javaEssentialFiltersAllRun() {
    assertCountedChain("java-essential", JavaNoopEssentialFilter.class, CHAIN);
  }

  @Test
  public void bothTimingFiltersAddTheirHeader() {
    for (String setup : new String[] {"logging-plain", "logging-essential"}) {
      assertCountedChain(setup, setup.endsWith("plain") ? TimingPlainFilter.class : TimingEssentialFilter.class, 1);
      withSetup(
          setup,
          port -> {
            String timing = get(port, "/status").headers().firstValue("Server-Timing").orElse(null);
            assertTrue(setup + ": " + timing, timing != null && timing.startsWith("app;dur="));
          });
    }
    withSetup(
        "none",
        port -> assertNull(get(port, "/status").headers().firstValue("Server-Timing").orElse(null)));
  }

  @Test
  public void eachRequestGoesThroughTheChainItsPathNames() {
    // The default mode of the driver: one server, every set-up side by side.
    Application app =
        new GuiceApplicationBuilder()
            .configure("lab.setups", "none,plain-x3,java-essential-x2,play-defaults-no-csrf")
            .build();
    TestServer server = Helpers.testServer(0, app);
    server.start();
    try {
      int port = server.getRunningHttpPort().getAsInt();
      for (int i = 0; i < 4; i++) {
        assertEquals(200, get(port, "/setup/plain-x3/status").statusCode());
      }
      assertEquals(200, get(port, "/setup/none/status").statusCode());
      assertEquals(404, get(port, "/setup/plian-x3/status").statusCode());
      JsonNode setups = filters(port).get("setups");
      assertEquals(4, setups.get("plain-x3").get("requests").asLong());
      assertEquals(3, setups.get("plain-x3").get("filters").size());
      for (JsonNode filter : setups.get("plain-x3").get("filters")) {
        assertEquals(NoopPlainFilter.class.getName(), filter.get("class").asText());
        assertEquals(4, filter.get("calls").asLong());
      }
      assertEquals(1, setups.get("none").get("requests").asLong());
      assertEquals(0, setups.get("none").get("filters").size());
      assertEquals(0, setups.get("java-essential-x2").get("requests").asLong());
      assertEquals(
          JavaNoopEssentialFilter.class.getName(),
          setups.get("java-essential-x2").at("/filters/1/class").asText());
      // Play's defaults without CSRF: the security headers are there, the forged post is not stopped.
      assertEquals(2, setups.get("play-defaults-no-csrf").get("filters").size());
      HttpResponse<String> response = get(port, "/setup/play-defaults-no-csrf/status");
      assertEquals("DENY", response.headers().firstValue("X-Frame-Options").orElse(null));
      // The server's own chain (lab.filters = none) still serves /status.
      assertFalse(get(port, "/status").headers().firstValue("X-Frame-Options").isPresent());
    } finally {
      server.stop();
    }
  }

  @Test
  public void anUnknownSetupInTheListStopsTheApplication() {
    try {
      new GuiceApplicationBuilder().configure("lab.setups", "none,plain-x0").build();
      fail("an unknown set-up must not start");
    } catch (RuntimeException e) {
      String message = String.valueOf(e.getMessage());
      assertTrue(message, message.contains("plain-x0"));
    }
  }

  @Test
  public void poolsMatchTheDriversSchema() {
    withSetup(
        "none",
        port -> {
          HttpResponse<String> response = get(port, "/pools");
          assertEquals(200, response.statusCode());
          PoolsSchema.assertMatches(Json.parse(response.body()));
        });
  }

  @Test
  public void anUnknownSetupStopsTheApplication() {
    try {
      new GuiceApplicationBuilder().configure("lab.filters", "plian").build();
      fail("an unknown set-up must not start");
    } catch (RuntimeException e) {
      String message = String.valueOf(e.getMessage());
      assertTrue(message, message.contains("plian") && message.contains("essential"));
    }
  }

  @Test
  public void theTimelineSamplesTheDefaultDispatcherBehindPlaysFilters() {
    // Play's default filters include the CSRF filter: the driver's POSTs carry no token.
    withSetup("play-defaults", port -> {
      try {
        JsonNode series = TimelineCheck.record(port, () -> {
          long until = System.nanoTime() + 200_000_000L;
          while (System.nanoTime() < until) {
            assertEquals(200, get(port, "/status").statusCode());
          }
        }, "default.busy", "default.queued", "default.threads");
        assertTrue(TimelineCheck.max(series, "default.threads") >= 1);
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
  }
}
