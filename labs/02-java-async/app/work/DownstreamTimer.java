package work;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.inject.Inject;
import javax.inject.Singleton;
import play.inject.ApplicationLifecycle;

/**
 * Stands in for the network: completes a reply after a delay, with one timer
 * thread for all waiting requests, so waiting holds no thread per request.
 * (Akka's scheduler would do the same, but it fires on 10 ms ticks, which
 * would make a 30 ms downstream noticeably slower than 30 ms.)
 */
@Singleton
public class DownstreamTimer {
  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(task -> {
        Thread thread = new Thread(task, "downstream-timer");
        thread.setDaemon(true);
        return thread;
      });

  @Inject
  public DownstreamTimer(ApplicationLifecycle lifecycle) {
    lifecycle.addStopHook(() -> {
      timer.shutdownNow();
      return CompletableFuture.completedFuture(null);
    });
  }

  /** A stage that completes with reply.get() after the delay. */
  public <T> CompletionStage<T> after(Duration delay, Supplier<T> reply) {
    CompletableFuture<T> result = new CompletableFuture<>();
    timer.schedule(() -> result.complete(reply.get()), delay.toNanos(), TimeUnit.NANOSECONDS);
    return result;
  }
}
