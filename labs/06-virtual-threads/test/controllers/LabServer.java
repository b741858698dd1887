package controllers;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import play.test.TestServer;

/** What the functional tests share: the JVM they run on and a plain HTTP client. */
final class LabServer {
  private LabServer() {}

  /** The Java feature release the tests run on: sbt's JVM, Java 17 in CI. */
  static final int JAVA = Runtime.version().feature();

  /** Whether this JVM has virtual threads (the endpoints that need them answer 501 otherwise). */
  static final boolean VIRTUAL_THREADS = JAVA >= 21;

  private static final HttpClient CLIENT = HttpClient.newHttpClient();

  static HttpResponse<String> get(TestServer server, String path) throws Exception {
    return CLIENT.send(request(server, path).build(), HttpResponse.BodyHandlers.ofString());
  }

  /** An empty POST, as the lab driver sends to change a setting while the server runs. */
  static HttpResponse<String> post(TestServer server, String path) throws Exception {
    return CLIENT.send(
        request(server, path).POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
  }

  private static HttpRequest.Builder request(TestServer server, String path) {
    int port = server.getRunningHttpPort().getAsInt();
    return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path));
  }
}
