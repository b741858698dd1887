package work;

import com.typesafe.config.Config;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.inject.Inject;
import javax.inject.Provider;
import javax.inject.Singleton;
import play.Environment;
import play.api.OptionalSourceMapper;
import play.api.routing.Router;
import play.http.DefaultHttpErrorHandler;
import play.mvc.Http;
import play.mvc.Result;
import play.mvc.Results;

/**
 * Play's error handler (conf/application.conf: play.http.errorHandler), with two
 * failures the lab expects answered in plain text rather than as Play's error page:
 * no virtual threads on this JVM (501 Not Implemented) and no database connection
 * (503). Both may arrive wrapped (a CompletionException), hence the walk along the causes.
 */
@Singleton
public class ErrorHandler extends DefaultHttpErrorHandler {
  @Inject
  public ErrorHandler(
      Config config, Environment environment, OptionalSourceMapper sourceMapper, Provider<Router> routes) {
    super(config, environment, sourceMapper, routes);
  }

  @Override
  public CompletionStage<Result> onServerError(Http.RequestHeader request, Throwable exception) {
    for (Throwable cause = exception; cause != null; cause = cause.getCause()) {
      if (cause instanceof VirtualThreads.Unavailable) {
        return plain(Http.Status.NOT_IMPLEMENTED, cause.getMessage());
      }
      if (cause instanceof DatabaseUnavailable) {
        return plain(Http.Status.SERVICE_UNAVAILABLE, cause.getMessage());
      }
    }
    return super.onServerError(request, exception);
  }

  private static CompletionStage<Result> plain(int status, String message) {
    return CompletableFuture.completedFuture(Results.status(status, message + "\n"));
  }
}
