package work;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.management.ManagementFactory;
import java.lang.management.PlatformManagedObject;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * The one place that touches the Java 21 virtual-thread API. The lab compiles with
 * javac 17, which does not know Executors.newVirtualThreadPerTaskExecutor, and runs
 * on whatever JVM starts it: the method is looked up when this class loads, and is
 * there only on Java 21 or later.
 */
public final class VirtualThreads {
  private VirtualThreads() {}

  /** Virtual threads are final (no --enable-preview) from Java 21 on (JEP 444). */
  public static final int FIRST_JAVA = 21;

  // ANCHOR: reflective
  // Executors.newVirtualThreadPerTaskExecutor(), or null on a JVM older than 21.
  private static final MethodHandle NEW_PER_TASK_EXECUTOR = findNewPerTaskExecutor();

  private static MethodHandle findNewPerTaskExecutor() {
    if (Runtime.version().feature() < FIRST_JAVA) {
      return null; // Java 19 and 20 have the method, but only as a preview feature
    }
    try {
      return MethodHandles.publicLookup()
          .findStatic(Executors.class, "newVirtualThreadPerTaskExecutor",
              MethodType.methodType(ExecutorService.class));
    } catch (NoSuchMethodException | IllegalAccessException e) {
      throw new IllegalStateException("Java " + Runtime.version() + " has no virtual threads", e);
    }
  }

  /** Whether this JVM has virtual threads. */
  public static boolean available() {
    return NEW_PER_TASK_EXECUTOR != null;
  }

  /**
   * An executor that starts a new virtual thread for every task it is given: nothing to
   * size, and a blocked task holds no platform thread (unless it is pinned to its carrier).
   *
   * @throws Unavailable on a JVM older than Java 21
   */
  public static ExecutorService newPerTaskExecutor() {
    if (!available()) {
      throw new Unavailable();
    }
    try {
      return (ExecutorService) NEW_PER_TASK_EXECUTOR.invokeExact();
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException("Executors.newVirtualThreadPerTaskExecutor failed", e);
    }
  }
  // ANCHOR_END: reflective

  /** Thrown on a JVM without virtual threads; ErrorHandler turns it into a 501. */
  public static final class Unavailable extends UnsupportedOperationException {
    private static final long serialVersionUID = 1L;

    public Unavailable() {
      super("virtual threads need Java " + FIRST_JAVA + " or later; this JVM is Java "
          + Runtime.version().feature() + " (" + System.getProperty("java.runtime.version") + ", "
          + System.getProperty("java.home") + "): start the server with a newer one (JAVA_HOME)");
    }
  }

  /**
   * How many carrier threads the JDK's virtual-thread scheduler runs virtual threads on:
   * its ForkJoinPool's parallelism, computed the way java.lang.VirtualThread's
   * createDefaultScheduler computes it (Java 21 to 25): the system property
   * jdk.virtualThreadScheduler.parallelism, else the available processors, and at most
   * jdk.virtualThreadScheduler.maxPoolSize when that is set.
   */
  public static int carriers() {
    String parallelism = System.getProperty("jdk.virtualThreadScheduler.parallelism");
    String maxPoolSize = System.getProperty("jdk.virtualThreadScheduler.maxPoolSize");
    int carriers =
        parallelism != null ? Integer.parseInt(parallelism) : Runtime.getRuntime().availableProcessors();
    return maxPoolSize != null ? Math.min(carriers, Integer.parseInt(maxPoolSize)) : carriers;
  }

  /**
   * What the JDK's virtual-thread scheduler is doing now, read from its management interface,
   * jdk.management.VirtualThreadSchedulerMXBean (Java 24 and later): the virtual threads mounted
   * on a carrier, those queued for one, and the carriers it has started. Each read is an
   * estimate, -1 where the JDK cannot tell (the interface's own words).
   */
  public static final class Scheduler {
    private final Object bean;
    private final MethodHandle mounted;
    private final MethodHandle queued;
    private final MethodHandle poolSize;

    // ANCHOR: scheduler
    private Scheduler(Class<? extends PlatformManagedObject> type) throws ReflectiveOperationException {
      bean = ManagementFactory.getPlatformMXBean(type);
      MethodHandles.Lookup lookup = MethodHandles.publicLookup();
      mounted = lookup.findVirtual(type, "getMountedVirtualThreadCount", MethodType.methodType(int.class));
      queued = lookup.findVirtual(type, "getQueuedVirtualThreadCount", MethodType.methodType(long.class));
      poolSize = lookup.findVirtual(type, "getPoolSize", MethodType.methodType(int.class));
    }
    // ANCHOR_END: scheduler

    /** Virtual threads mounted on a carrier now: the carriers busy. */
    public long mounted() {
      return read(mounted);
    }

    /** Virtual threads queued to start or to continue: ready, waiting for a carrier. */
    public long queued() {
      return read(queued);
    }

    /** The carrier threads started and not yet ended. */
    public long carriers() {
      return read(poolSize);
    }

    private long read(MethodHandle getter) {
      try {
        return ((Number) getter.invoke(bean)).longValue();
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Throwable e) {
        throw new IllegalStateException("VirtualThreadSchedulerMXBean failed", e);
      }
    }
  }

  // The scheduler's management interface, or null on a JVM older than 24 (javac 17 cannot name it).
  private static final Scheduler SCHEDULER = findScheduler();

  private static Scheduler findScheduler() {
    try {
      return new Scheduler(Class.forName("jdk.management.VirtualThreadSchedulerMXBean")
          .asSubclass(PlatformManagedObject.class));
    } catch (ClassNotFoundException e) {
      return null; // Java 23 or older
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new IllegalStateException("Java " + Runtime.version() + " has jdk.management.VirtualThreadSchedulerMXBean"
          + " but it cannot be read", e);
    }
  }

  /** The scheduler's management interface, where the JVM has one (Java 24 and later). */
  public static java.util.Optional<Scheduler> scheduler() {
    return java.util.Optional.ofNullable(SCHEDULER);
  }
}
