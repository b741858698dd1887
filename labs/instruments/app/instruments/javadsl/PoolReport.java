package instruments.javadsl;

import akka.Version;
import akka.dispatch.ThreadPoolConfig;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.typesafe.config.Config;
import java.lang.management.ManagementFactory;
import java.lang.management.OperatingSystemMXBean;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import play.libs.Json;

/**
 * What each pool really has, computed the way Akka and the JDK compute it,
 * so that nobody has to type a pool size into a prediction.
 */
public final class PoolReport {
  private PoolReport() {}

  /** A dispatcher's executor and thread count, from its configuration. */
  public static ObjectNode dispatcher(Config config, String path) {
    Config dispatcher = config.getConfig(path);
    String executor = dispatcher.getString("executor");
    if (executor.equals("default-executor")) {
      executor = dispatcher.getString("default-executor.fallback");
    }
    int threads;
    switch (executor) {
      case "fork-join-executor": {
        Config fj = dispatcher.getConfig("fork-join-executor");
        threads = ThreadPoolConfig.scaledPoolSize(fj.getInt("parallelism-min"),
            fj.getDouble("parallelism-factor"), fj.getInt("parallelism-max"));
        break;
      }
      case "thread-pool-executor": {
        Config tp = dispatcher.getConfig("thread-pool-executor");
        threads = tp.hasPath("fixed-pool-size") && !tp.getString("fixed-pool-size").equals("off")
            ? tp.getInt("fixed-pool-size")
            : ThreadPoolConfig.scaledPoolSize(tp.getInt("core-pool-size-min"),
                tp.getDouble("core-pool-size-factor"), tp.getInt("core-pool-size-max"));
        break;
      }
      default:
        throw new IllegalArgumentException(path + ": unsupported executor " + executor);
    }
    ObjectNode node = Json.newObject();
    node.put("dispatcher", path);
    node.put("executor", executor);
    node.put("threads", threads);
    return node;
  }

  /**
   * Adds what a driver on another machine needs: `process_cpu_seconds`, the CPU time the
   * whole JVM has used so far (its /proc cannot see this process), `jit_compile_seconds`,
   * the JIT's compile time so far (warm-up), and `properties`, the
   * -Dkey=value options this JVM was started with, secrets left out, to compare with the
   * set-up it means to measure.
   */
  public static void addProcess(ObjectNode report) {
    OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    long nanos = os instanceof com.sun.management.OperatingSystemMXBean
        ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() : -1;
    if (nanos >= 0) {
      report.put("process_cpu_seconds", java.math.BigDecimal.valueOf(nanos, 9));
    } else {
      report.putNull("process_cpu_seconds");
    }
    // The JIT's compile time so far: while it keeps rising, the server is still warming up.
    java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    if (jit != null && jit.isCompilationTimeMonitoringSupported()) {
      report.put("jit_compile_seconds", java.math.BigDecimal.valueOf(jit.getTotalCompilationTime(), 3));
    } else {
      report.putNull("jit_compile_seconds");
    }
    report.set("properties", properties(ManagementFactory.getRuntimeMXBean().getInputArguments()));
    report.put("play", play.core.PlayVersion.current());
    report.put("actors", actors());
  }

  /** The actor library this server runs on and its version: "Akka 2.6.21" or "Pekko 1.0.3". */
  public static String actors() {
    return (Version.class.getName().startsWith("org.apache.pekko.") ? "Pekko " : "Akka ") + Version.current();
  }

  /** Words that mark a -D key as a secret's, in any case ("pass" also covers password, passwd). */
  public static final List<String> SECRET_WORDS = List.of("secret", "pass", "key", "token", "credential");

  /** Whether a -D key names a secret (`play.http.secret.key`, `db.default.pass`, `api.token`). */
  public static boolean isSecret(String key) {
    String lower = key.toLowerCase(Locale.ROOT);
    return SECRET_WORDS.stream().anyMatch(lower::contains);
  }

  /** The -Dkey=value options among a JVM's arguments, secrets left out. */
  public static ObjectNode properties(List<String> arguments) {
    ObjectNode properties = Json.newObject();
    for (String arg : arguments) {
      String[] keyValue = arg.startsWith("-D") ? arg.substring(2).split("=", 2) : new String[0];
      if (keyValue.length == 2 && !isSecret(keyValue[0])) {
        properties.put(keyValue[0], keyValue[1]);
      }
    }
    return properties;
  }

  // ANCHOR: commonpool-report
  /**
   * Where CompletableFuture.supplyAsync(work) -- no executor -- really runs.
   * Up to Java 21 the JDK uses ForkJoinPool.commonPool() only when its
   * parallelism is above 1; otherwise every task gets a brand-new thread
   * (ThreadPerTaskExecutor). Java 25 always uses the common pool (JDK-8319447).
   */
  public static ObjectNode commonPool() {
    Executor actual = new CompletableFuture<Void>().defaultExecutor();
    boolean usesCommonPool = actual == ForkJoinPool.commonPool();
    ObjectNode node = Json.newObject();
    node.put("parallelism", ForkJoinPool.getCommonPoolParallelism());
    node.put("parallelism_property",
        System.getProperty("java.util.concurrent.ForkJoinPool.common.parallelism"));
    node.put("completable_future_executor", actual.getClass().getName());
    node.put("executor", usesCommonPool ? "ForkJoinPool.commonPool()" : "a new thread per task");
    // null: no pool bounds the number of tasks running at once.
    if (usesCommonPool) {
      node.put("threads", ForkJoinPool.getCommonPoolParallelism());
    } else {
      node.putNull("threads");
    }
    return node;
  }
  // ANCHOR_END: commonpool-report
}
