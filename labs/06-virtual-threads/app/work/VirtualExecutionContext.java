package work;

import akka.actor.ActorSystem;
import javax.inject.Inject;
import javax.inject.Singleton;
import play.libs.concurrent.CustomExecutionContext;

// ANCHOR: java-context
/**
 * The Java handle on `virtual-dispatcher`: used exactly like a pool's context, but
 * every task it runs gets a virtual thread of its own.
 */
@Singleton
public class VirtualExecutionContext extends CustomExecutionContext {
  @Inject
  public VirtualExecutionContext(ActorSystem actorSystem) {
    super(actorSystem, "virtual-dispatcher");
  }
}
// ANCHOR_END: java-context
