package work;

import akka.actor.ActorSystem;
import javax.inject.Inject;
import javax.inject.Singleton;
import play.libs.concurrent.CustomExecutionContext;

// ANCHOR: context
/** The Java handle on `offload-dispatcher`, the pool for blocking work. */
@Singleton
public class OffloadExecutionContext extends CustomExecutionContext {
  @Inject
  public OffloadExecutionContext(ActorSystem actorSystem) {
    super(actorSystem, "offload-dispatcher");
  }
}
// ANCHOR_END: context
