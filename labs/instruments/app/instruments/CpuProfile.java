package instruments;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

/**
 * Where the server's Java code spends its CPU while it is under load: a JDK Flight Recorder
 * recording of execution samples (the event jdk.ExecutionSample: a thread's stack, taken at a
 * fixed period while it runs Java code), folded into one line per distinct stack.
 *
 * <p>The driver starts it before a measured run (POST /profile/start) and takes the stacks after
 * it (POST /profile/stop). The answer is the "collapsed" format flame-graph tools read: each line
 * is a stack, root first, frames separated by ';', then a space and the number of samples. The
 * root frame is the thread's pool (its name with the numbers taken out), so a flame graph shows
 * which pool burns the CPU as well as which code. Lines starting with '#' say how it was taken.
 *
 * <p>JFR keeps 64 frames of a stack unless the JVM starts with
 * -XX:FlightRecorderOptions:stackdepth=N; Play's stacks are deeper than that, so the lab driver
 * starts a server it profiles with a bigger depth, and the answer counts the truncated stacks.
 */
public final class CpuProfile {

  /** The shortest and the longest sampling period a driver may ask for. */
  public static final int MIN_PERIOD_MS = 1;
  public static final int MAX_PERIOD_MS = 1_000;

  // A lambda's class is numbered anew in every JVM ("Foo$$Lambda$123+0x0000000800c4",
  // "Foo$$Lambda/388343719" on JDK 17, "Foo$$Lambda/0x..." on 21): without the numbers, the same
  // code folds into the same frame in every run.
  private static final Pattern LAMBDA = Pattern.compile("\\$\\$Lambda(\\$\\d+)?[/+.](0x[0-9a-f]+|\\d+)");
  private static final Pattern NUMBER = Pattern.compile("\\d+");

  private Recording recording;
  private int periodMs;

  /** Starts a recording afresh, sampling every `periodMs`; an earlier one is dropped. */
  public synchronized void start(int periodMs) {
    if (periodMs < MIN_PERIOD_MS || periodMs > MAX_PERIOD_MS) {
      throw new IllegalArgumentException(
          "period_ms must be " + MIN_PERIOD_MS + ".." + MAX_PERIOD_MS + ", not " + periodMs);
    }
    close();
    this.periodMs = periodMs;
    // Only the execution samples: no other event's cost or size.
    // ANCHOR: start
    recording = new Recording();
    recording.setName("play-under-load-cpu-profile");
    recording.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(periodMs)).withStackTrace();
    recording.start();
    // ANCHOR_END: start
  }

  /** Stops the recording and answers its stacks, folded (see the class comment). */
  public synchronized String stop() throws IOException {
    if (recording == null) {
      throw new IllegalStateException("no profile is running: POST /profile/start first");
    }
    Path file = Files.createTempFile("cpu-profile", ".jfr");
    try {
      recording.stop();
      recording.dump(file);
      return fold(file);
    } finally {
      close();
      Files.deleteIfExists(file);
    }
  }

  private String fold(Path file) throws IOException {
    Map<String, Long> stacks = new HashMap<>();
    long samples = 0;
    long truncated = 0;
    int deepest = 0;
    try (RecordingFile events = new RecordingFile(file)) {
      while (events.hasMoreEvents()) {
        RecordedEvent event = events.readEvent();
        RecordedStackTrace trace = event.getStackTrace();
        if (!"jdk.ExecutionSample".equals(event.getEventType().getName()) || trace == null) {
          continue;
        }
        samples++;
        truncated += trace.isTruncated() ? 1 : 0;
        // ANCHOR: fold
        List<RecordedFrame> frames = trace.getFrames();
        deepest = Math.max(deepest, frames.size());
        StringBuilder stack = new StringBuilder(pool(event.getThread("sampledThread")));
        for (int i = frames.size() - 1; i >= 0; i--) {
          stack.append(';').append(frame(frames.get(i)));
        }
        stacks.merge(stack.toString(), 1L, Long::sum);
        // ANCHOR_END: fold
      }
    }
    StringBuilder out = new StringBuilder()
        .append("# period_ms ").append(periodMs).append('\n')
        .append("# samples ").append(samples).append('\n')
        .append("# truncated ").append(truncated).append('\n')
        .append("# deepest ").append(deepest).append('\n');
    stacks.forEach((stack, count) -> out.append(stack).append(' ').append(count).append('\n'));
    return out.toString();
  }

  /** The root frame: the thread's pool, e.g. "[application-akka.actor.default-dispatcher-N]". */
  private static String pool(RecordedThread thread) {
    String name = thread == null ? null : thread.getJavaName();
    if (name == null || name.isEmpty()) {
      name = "unnamed"; // a virtual thread has no name unless its code gives it one
    }
    return "[" + clean(NUMBER.matcher(name).replaceAll("N")) + "]";
  }

  /** A frame as flame-graph tools name Java frames: "play/api/mvc/Action.apply". */
  private static String frame(RecordedFrame frame) {
    RecordedMethod method = frame.getMethod();
    if (method == null) {
      return "unknown";
    }
    String type = LAMBDA.matcher(method.getType().getName()).replaceAll("\\$\\$Lambda");
    return clean(type.replace('.', '/') + "." + method.getName());
  }

  // ';' separates frames, a line ends a stack, the last space comes before the count.
  private static String clean(String name) {
    return name.replace(';', ':').replace('\n', ' ').replace('\r', ' ');
  }

  private void close() {
    if (recording != null) {
      recording.close();
      recording = null;
    }
  }
}
