package filters;

import java.util.concurrent.atomic.LongAdder;
import play.mvc.EssentialAction;
import play.mvc.EssentialFilter;

// ANCHOR: java-essential
/** The Java `EssentialFilter` API: count, then hand on the next action's accumulator. */
public final class JavaNoopEssentialFilter extends EssentialFilter implements Counted {
  private final LongAdder counter = new LongAdder();

  @Override
  public EssentialAction apply(EssentialAction next) {
    return EssentialAction.of(
        request -> {
          counter.increment();
          return next.apply(request);
        });
  }

  @Override
  public long calls() {
    return counter.sum();
  }
}
// ANCHOR_END: java-essential
