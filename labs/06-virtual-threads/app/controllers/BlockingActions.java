package controllers;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.inject.Inject;
import play.mvc.Controller;
import play.mvc.Result;
import work.BlockingWork;
import work.OffloadExecutionContext;
import work.PerRequestExecutionContext;
import work.VirtualExecutionContext;

/** The same blocking work on Play's default dispatcher, on a sized pool, and on virtual threads. */
public class BlockingActions extends Controller {
  private final BlockingWork work;
  private final OffloadExecutionContext pool;
  private final PerRequestExecutionContext perRequest;
  private final VirtualExecutionContext virtual;

  @Inject
  public BlockingActions(
      BlockingWork work,
      OffloadExecutionContext pool,
      PerRequestExecutionContext perRequest,
      VirtualExecutionContext virtual) {
    this.work = work;
    this.pool = pool;
    this.perRequest = perRequest;
    this.virtual = virtual;
  }

  // ANCHOR: default
  // Runs on Play's default dispatcher, and holds one of its few threads
  // for the whole duration of the work.
  public Result onDefaultDispatcher() {
    return ok("done on " + work.run() + "\n");
  }
  // ANCHOR_END: default

  // ANCHOR: pool
  // On offload-dispatcher: lab.pool-size platform threads, each held for the
  // whole duration of the work.
  public CompletionStage<Result> onPool() {
    return CompletableFuture.supplyAsync(() -> ok("done on " + work.run() + "\n"), pool.current());
  }
  // ANCHOR_END: pool

  // The same on per-request-dispatcher: lab.high-concurrency platform threads.
  public CompletionStage<Result> onPerRequestPool() {
    return CompletableFuture.supplyAsync(() -> ok("done on " + work.run() + "\n"), perRequest.current());
  }

  // ANCHOR: virtual
  // The same code on virtual-dispatcher: a new virtual thread for every request.
  // While it sleeps, the virtual thread unmounts and its carrier thread runs others.
  public CompletionStage<Result> onVirtualThread() {
    return CompletableFuture.supplyAsync(() -> ok("done on " + work.run() + "\n"), virtual.current());
  }
  // ANCHOR_END: virtual

  // Where the requests' locks go: a lock that other threads could reach cannot be
  // optimised away by the JIT (escape analysis removes locking on an object that no
  // other thread can see), so the monitor below is really entered on every request.
  private static volatile Object lastLock;

  // ANCHOR: virtual-synchronized
  // The same sleep inside a synchronized block, as in a legacy client whose methods
  // are synchronized. The lock is new for every request: no request ever waits for
  // another's. Up to Java 23 a virtual thread that blocks while it holds a monitor
  // cannot unmount: it stays pinned to its carrier thread, and there are only as many
  // carriers as cores. Java 24 removed that pinning (JEP 491).
  public CompletionStage<Result> onVirtualThreadSynchronized() {
    return CompletableFuture.supplyAsync(
        () -> {
          Object lock = new Object();
          lastLock = lock;
          synchronized (lock) {
            return ok("done on " + work.run() + "\n");
          }
        },
        virtual.current());
  }
  // ANCHOR_END: virtual-synchronized
}
