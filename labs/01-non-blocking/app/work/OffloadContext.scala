package work

import akka.actor.ActorSystem
import javax.inject.{Inject, Singleton}
import play.api.libs.concurrent.CustomExecutionContext

// ANCHOR: scala-context
/** The Scala handle on `offload-dispatcher`, the same pool as the Java one. */
@Singleton
class OffloadContext @Inject() (system: ActorSystem)
    extends CustomExecutionContext(system, "offload-dispatcher")
// ANCHOR_END: scala-context
