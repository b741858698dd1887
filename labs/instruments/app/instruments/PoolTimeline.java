package instruments;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * A timeline of the server's pools while it is under load: a thread of its own reads every
 * gauge (a pool's busy threads, its queued tasks, ...), the JVM's CPU time and its thread count
 * at a fixed rate, whatever the load does to the pools it watches, and keeps the samples
 * until the lab driver asks for them.
 *
 * <p>The sampler is a platform thread outside every pool it reads: a starved dispatcher cannot
 * delay a sample, and a sample takes no thread from a pool. The driver starts it before a
 * measured run (POST /timeline/start) and takes the samples after it (POST /timeline/stop).
 */
public final class PoolTimeline {

  /** One number the sampler reads, e.g. a pool's busy threads. */
  @FunctionalInterface
  public interface Gauge {
    long read();
  }

  /** The fastest and the slowest rate a driver may ask for, per second. */
  public static final int MIN_HZ = 1;
  public static final int MAX_HZ = 100;
  /** The most samples kept: 20 a second for ten minutes. Later ones are counted, not kept. */
  public static final int MAX_SAMPLES = 12_000;

  private final Map<String, Gauge> gauges;
  private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
  private final List<long[]> samples = new ArrayList<>();
  private ScheduledExecutorService sampler;
  private long startNanos;
  private int hz;
  private long dropped;
  // Which start() a sample belongs to: a sample of a stopped sampler that finishes late is dropped.
  private int run;

  /** A timeline of these gauges, in this order (names such as "default.busy"). */
  public PoolTimeline(Map<String, Gauge> gauges) {
    this.gauges = new LinkedHashMap<>(gauges);
  }

  /** Starts sampling afresh, `hz` times a second; what an earlier start kept is dropped. */
  public synchronized void start(int hz) {
    if (hz < MIN_HZ || hz > MAX_HZ) {
      throw new IllegalArgumentException("hz must be " + MIN_HZ + ".." + MAX_HZ + ", not " + hz);
    }
    stopSampler();
    samples.clear();
    dropped = 0;
    this.hz = hz;
    startNanos = System.nanoTime();
    sampler = Executors.newSingleThreadScheduledExecutor(task -> {
      Thread thread = new Thread(task, "pool-timeline");
      thread.setDaemon(true);
      return thread;
    });
    // Fixed rate, not fixed delay: the samples stay on their clock even when one is late.
    int thisRun = ++run;
    sampler.scheduleAtFixedRate(() -> sample(thisRun), 0, 1_000_000L / hz, TimeUnit.MICROSECONDS);
  }

  /** Stops sampling and answers what it kept, as JSON (see {@link #json}). */
  public synchronized String stop() {
    stopSampler();
    run++;
    return json();
  }

  /** The JVM's CPU time so far, in nanoseconds; -1 where it cannot tell. */
  private static long cpuNanos() {
    java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
    return os instanceof com.sun.management.OperatingSystemMXBean
        ? ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime()
        : -1;
  }

  private void stopSampler() {
    if (sampler != null) {
      sampler.shutdownNow();
      sampler = null;
    }
  }

  // ANCHOR: sample
  private void sample(int thisRun) {
    long[] row = new long[4 + gauges.size()];
    row[0] = (System.nanoTime() - startNanos) / 1_000_000;
    long cpu = cpuNanos();
    row[1] = cpu < 0 ? -1 : cpu / 1_000_000;
    row[2] = threads.getThreadCount();
    // Threads started since the JVM began: a thread per task shows here even when each one ends
    // between two samples, where the live count misses it.
    row[3] = threads.getTotalStartedThreadCount();
    int i = 4;
    for (Gauge gauge : gauges.values()) {
      long value;
      try {
        value = gauge.read();
      } catch (RuntimeException e) {
        // Unknown. A gauge that throws must not end the sampling: a scheduled task that throws
        // is never run again.
        value = -1;
      }
      row[i++] = value;
    }
    synchronized (this) {
      if (thisRun != run || sampler == null) {
        return;
      }
      if (samples.size() < MAX_SAMPLES) {
        samples.add(row);
      } else {
        dropped++;
      }
    }
  }
  // ANCHOR_END: sample

  /**
   * {"hz": 20, "dropped": 0, "series": {"t_ms": [...], "cpu_ms": [...], "jvm_threads": [...],
   * "jvm_threads_started": [...], "default.busy": [...], ...}}: one array per column, a value per
   * sample. `cpu_ms` is the JVM's CPU time so far (-1 where the JVM cannot tell); `jvm_threads` its
   * live platform threads; `jvm_threads_started` the platform threads it has started so far; a
   * gauge's -1 means it could not be read.
   */
  private String json() {
    List<String> names = new ArrayList<>(List.of("t_ms", "cpu_ms", "jvm_threads", "jvm_threads_started"));
    names.addAll(gauges.keySet());
    StringBuilder out = new StringBuilder()
        .append("{\"hz\":").append(hz).append(",\"dropped\":").append(dropped).append(",\"series\":{");
    for (int column = 0; column < names.size(); column++) {
      if (column > 0) out.append(',');
      out.append('"').append(names.get(column).replace("\\", "\\\\").replace("\"", "\\\"")).append("\":[");
      for (int row = 0; row < samples.size(); row++) {
        if (row > 0) out.append(',');
        out.append(samples.get(row)[column]);
      }
      out.append(']');
    }
    return out.append("}}").toString();
  }

  /** Gauges "NAME.busy", "NAME.queued" and "NAME.threads" of an executor the JDK provides. */
  // ANCHOR: executor
  public static Map<String, Gauge> executor(String name, ExecutorService executor) {
    return executor(name, () -> executor);
  }

  /** The same gauges of the executor `current` gives at each sample. */
  static Map<String, Gauge> executor(String name, Supplier<ExecutorService> current) {
    ExecutorService now = current.get();
    Map<String, Gauge> found = new LinkedHashMap<>();
    if (now instanceof ForkJoinPool) {
      // Threads running a task, a blocked one included (an estimate, as the JDK says).
      found.put(name + ".busy", () -> ((ForkJoinPool) current.get()).getActiveThreadCount());
      found.put(name + ".queued", () -> {
        ForkJoinPool pool = (ForkJoinPool) current.get();
        return pool.getQueuedSubmissionCount() + pool.getQueuedTaskCount();
      });
      found.put(name + ".threads", () -> ((ForkJoinPool) current.get()).getPoolSize());
    } else if (now instanceof ThreadPoolExecutor) {
      found.put(name + ".busy", () -> ((ThreadPoolExecutor) current.get()).getActiveCount());
      found.put(name + ".queued", () -> ((ThreadPoolExecutor) current.get()).getQueue().size());
      found.put(name + ".threads", () -> ((ThreadPoolExecutor) current.get()).getPoolSize());
    } else {
      throw new IllegalArgumentException(name + ": cannot read a " + now.getClass().getName());
    }
    return found;
  }
  // ANCHOR_END: executor

  /**
   * Gauges of the executor behind an Akka dispatcher (a ForkJoinPool or a ThreadPoolExecutor),
   * named as {@link #executor} names them. Akka keeps the executor behind
   * `Dispatcher.executorService`, which Scala's `protected` leaves public in the bytecode:
   * reflection reads it without a copy of Akka's internals here. Read at every sample: a
   * dispatcher left without tasks for its shutdown-timeout shuts its executor down and makes a
   * new one when work comes again (akka.dispatch.MessageDispatcher).
   */
  public static Map<String, Gauge> dispatcher(String name, Object dispatcher) {
    return executor(name, () -> dispatcherExecutor(dispatcher));
  }

  /** Gauges of Akka dispatchers (a name for each dispatcher id), in the map's order. */
  public static Map<String, Gauge> dispatchers(akka.actor.ActorSystem system, Map<String, String> ids) {
    Map<String, Gauge> found = new LinkedHashMap<>();
    ids.forEach((name, id) -> found.putAll(dispatcher(name, system.dispatchers().lookup(id))));
    return found;
  }

  /** The executor behind an Akka dispatcher (see {@link #dispatcher}). */
  public static ExecutorService dispatcherExecutor(Object dispatcher) {
    try {
      Method executorService = dispatcher.getClass().getMethod("executorService");
      executorService.setAccessible(true);
      Object delegate = executorService.invoke(dispatcher);
      // The delegate's class is private to Akka's Dispatcher; its `executor` is public.
      Method executor = delegate.getClass().getMethod("executor");
      executor.setAccessible(true);
      return (ExecutorService) executor.invoke(delegate);
    } catch (ReflectiveOperationException | ClassCastException | SecurityException e) {
      throw new IllegalStateException("cannot read the executor of " + dispatcher.getClass().getName(), e);
    }
  }
}
