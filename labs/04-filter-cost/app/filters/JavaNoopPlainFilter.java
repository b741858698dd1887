package filters;

import akka.stream.Materializer;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import play.mvc.Filter;
import play.mvc.Http;
import play.mvc.Result;

// ANCHOR: java-plain
/** The Java `Filter` API: count, then pass the request on. */
public final class JavaNoopPlainFilter extends Filter implements Counted {
  private final LongAdder counter = new LongAdder();

  public JavaNoopPlainFilter(Materializer materializer) {
    super(materializer);
  }

  @Override
  public CompletionStage<Result> apply(
      Function<Http.RequestHeader, CompletionStage<Result>> next, Http.RequestHeader request) {
    counter.increment();
    return next.apply(request);
  }

  @Override
  public long calls() {
    return counter.sum();
  }
}
// ANCHOR_END: java-plain
