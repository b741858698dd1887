package filters;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/** One hand-written HTTP request, for headers Java's HTTP client will not send (Host). */
final class RawHttp {
  private RawHttp() {}

  static String statusLine(int port, String requestHead) {
    try (Socket socket = new Socket("127.0.0.1", port)) {
      socket.setSoTimeout(10_000);
      OutputStream out = socket.getOutputStream();
      out.write((requestHead + "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.flush();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));
      return String.valueOf(in.readLine());
    } catch (Exception e) {
      throw new AssertionError("raw request to port " + port + ": " + e, e);
    }
  }
}
