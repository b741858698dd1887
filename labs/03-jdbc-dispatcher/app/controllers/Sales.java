package controllers;

import database.DatabaseExecutionContext;
import database.SalesRepository;
import database.SalesRepository.NoConnection;
import database.SizedDispatchers;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.inject.Inject;
import play.libs.Json;
import play.mvc.Controller;
import play.mvc.Result;

/** One JSON endpoint, reachable two ways: on Play's default dispatcher, or on database.dispatcher. */
public class Sales extends Controller {
  private final SalesRepository sales;
  private final DatabaseExecutionContext databaseContext;
  private final SizedDispatchers sized;

  @Inject
  public Sales(SalesRepository sales, DatabaseExecutionContext databaseContext, SizedDispatchers sized) {
    this.sales = sales;
    this.databaseContext = databaseContext;
    this.sized = sized;
  }

  // ANCHOR: default-dispatcher
  // The JDBC call runs right in the action, on one of the default
  // dispatcher's few threads, which Play also needs for everything else.
  public Result onDefaultDispatcher(int region) {
    return report(region);
  }
  // ANCHOR_END: default-dispatcher

  // ANCHOR: database-dispatcher
  // The JDBC call runs on database.dispatcher; the default dispatcher's
  // thread returns at once and serves other requests meanwhile.
  public CompletionStage<Result> onDatabaseDispatcher(int region) {
    return CompletableFuture.supplyAsync(() -> report(region), databaseContext.current());
  }
  // ANCHOR_END: database-dispatcher

  // ANCHOR: sized-dispatcher
  // The same, on a copy of database.dispatcher with `threads` threads
  // (lab.dispatcher-sizes lists the copies), and optionally another jitter
  // for the wait: the lab's sweep measures several sizes on one server.
  public CompletionStage<Result> onSizedDispatcher(int region, int threads, double jitter) {
    var dispatcher = sized.withThreads(threads);
    if (dispatcher == null) {
      return CompletableFuture.completedFuture(
          badRequest(Json.toJson(Map.of("error", "no dispatcher of " + threads
              + " threads; lab.dispatcher-sizes has " + sized.ids().keySet()))));
    }
    if (jitter > 1) {
      return CompletableFuture.completedFuture(
          badRequest(Json.toJson(Map.of("error", "jitter must be between 0 and 1"))));
    }
    return CompletableFuture.supplyAsync(() -> report(region, jitter), dispatcher);
  }
  // ANCHOR_END: sized-dispatcher

  private Result report(int region) {
    return report(region, -1);
  }

  // jitter < 0: lab.query-jitter.
  private Result report(int region, double jitter) {
    if (region < 1 || region > SalesRepository.REGIONS) {
      return badRequest(
          Json.toJson(Map.of("error", "region must be 1.." + SalesRepository.REGIONS)));
    }
    try {
      return ok(Json.toJson(jitter < 0 ? sales.regionReport(region) : sales.regionReport(region, jitter)));
    } catch (NoConnection e) {
      // ANCHOR: timeout
      // No connection within HikariCP's connectionTimeout: say so with a 503,
      // which ab counts as a non-2xx response, instead of hiding the wait.
      return status(
          SERVICE_UNAVAILABLE, Json.toJson(Map.of("error", "no database connection: " + e.getMessage())));
      // ANCHOR_END: timeout
    }
  }
}
