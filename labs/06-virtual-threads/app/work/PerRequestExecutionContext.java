package work;

import akka.actor.ActorSystem;
import javax.inject.Inject;
import javax.inject.Singleton;
import play.libs.concurrent.CustomExecutionContext;

/** The Java handle on `per-request-dispatcher`, a platform thread for every request in flight. */
@Singleton
public class PerRequestExecutionContext extends CustomExecutionContext {
  @Inject
  public PerRequestExecutionContext(ActorSystem actorSystem) {
    super(actorSystem, "per-request-dispatcher");
  }
}
