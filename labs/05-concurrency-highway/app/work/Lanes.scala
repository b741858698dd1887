package work

import akka.actor.ActorSystem
import javax.inject.{Inject, Singleton}
import play.api.Configuration
import play.api.libs.concurrent.CustomExecutionContext

// ANCHOR: lanes
/**
 * The "lanes" of the fixed-service-time endpoint: a fixed pool of
 * `lab.pool-size` threads, each holding a request for exactly `lab.work-ms`.
 * Its capacity is known before the first request: pool-size / work-ms.
 */
@Singleton
class Lanes @Inject() (system: ActorSystem, config: Configuration)
    extends CustomExecutionContext(system, "lanes-dispatcher") {
  val serviceMillis: Long = config.get[Long]("lab.work-ms")

  /** Occupies the calling lane (thread) for the fixed service time. */
  def serve(): Unit = Thread.sleep(serviceMillis)
}
// ANCHOR_END: lanes
