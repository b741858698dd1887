package controllers;

import database.DatabaseExecutionContext;
import database.SalesRepository;
import database.SalesRepository.NoConnection;
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

  @Inject
  public Sales(SalesRepository sales, DatabaseExecutionContext databaseContext) {
    this.sales = sales;
    this.databaseContext = databaseContext;
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

  private Result report(int region) {
    if (region < 1 || region > SalesRepository.REGIONS) {
      return badRequest(
          Json.toJson(Map.of("error", "region must be 1.." + SalesRepository.REGIONS)));
    }
    try {
      return ok(Json.toJson(sales.regionReport(region)));
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
