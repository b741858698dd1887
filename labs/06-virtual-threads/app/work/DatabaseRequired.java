package work;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.inject.Inject;
import play.mvc.Action;
import play.mvc.Http;
import play.mvc.Result;

/**
 * Action composition for the JDBC endpoints (`@With(DatabaseRequired.class)`): on a
 * server without a database they answer 503 at once, before any thread is chosen
 * for the query.
 */
public class DatabaseRequired extends Action.Simple {
  private final SleepQuery query;

  @Inject
  public DatabaseRequired(SleepQuery query) {
    this.query = query;
  }

  @Override
  public CompletionStage<Result> call(Http.Request request) {
    if (!query.configured()) {
      return CompletableFuture.completedFuture(
          status(Http.Status.SERVICE_UNAVAILABLE, DatabaseUnavailable.NOT_CONFIGURED + "\n"));
    }
    return delegate.call(request);
  }
}
