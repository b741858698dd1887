package work;

import akka.actor.ActorSystem;
import javax.inject.Inject;
import javax.inject.Singleton;
import play.libs.concurrent.CustomExecutionContext;

/** The Java handle on `offload-dispatcher`, the sized pool of platform threads. */
@Singleton
public class OffloadExecutionContext extends CustomExecutionContext {
  @Inject
  public OffloadExecutionContext(ActorSystem actorSystem) {
    super(actorSystem, "offload-dispatcher");
  }
}
