package database;

import akka.actor.ActorSystem;
import javax.inject.Inject;
import javax.inject.Singleton;
import play.libs.concurrent.CustomExecutionContext;

// ANCHOR: context
/** The handle on `database.dispatcher`, the pool the blocking JDBC calls run on. */
@Singleton
public class DatabaseExecutionContext extends CustomExecutionContext {
  @Inject
  public DatabaseExecutionContext(ActorSystem actorSystem) {
    super(actorSystem, "database.dispatcher");
  }
}
// ANCHOR_END: context
