package controllers;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.inject.Inject;
import play.mvc.Controller;
import play.mvc.Result;
import play.mvc.With;
import work.DatabaseRequired;
import work.OffloadExecutionContext;
import work.SleepQuery;
import work.VirtualExecutionContext;

/** A real JDBC call (SleepQuery's pg_sleep) on a virtual thread or on the sized pool. */
@With(DatabaseRequired.class)
public class JdbcActions extends Controller {
  private final SleepQuery query;
  private final OffloadExecutionContext pool;
  private final VirtualExecutionContext virtual;

  @Inject
  public JdbcActions(SleepQuery query, OffloadExecutionContext pool, VirtualExecutionContext virtual) {
    this.query = query;
    this.pool = pool;
    this.virtual = virtual;
  }

  // ANCHOR: jdbc-virtual
  // The JDBC call on a virtual thread of its own. Threads are no longer the limit:
  // every request gets one at once, and then waits for one of HikariCP's
  // lab.connections connections instead.
  public CompletionStage<Result> onVirtualThread() {
    return CompletableFuture.supplyAsync(() -> ok("done on " + query.run() + "\n"), virtual.current());
  }
  // ANCHOR_END: jdbc-virtual

  // The same on offload-dispatcher's lab.pool-size platform threads.
  public CompletionStage<Result> onPool() {
    return CompletableFuture.supplyAsync(() -> ok("done on " + query.run() + "\n"), pool.current());
  }
}
