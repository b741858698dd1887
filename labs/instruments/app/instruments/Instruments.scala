package instruments

import javax.inject.{Inject, Singleton}
import play.api.{Configuration, Environment}
import play.api.inject.Injector
import play.api.libs.json.Json
import play.api.mvc.{AbstractController, ControllerComponents}

/**
 * The endpoints the lab driver reads a server through (conf/instruments.routes): its pools, their
 * timeline during a measured run, and a CPU profile of it. Which pools is the lab's to say: the
 * class that `instruments.pools` names in its configuration (LabPools).
 */
@Singleton
class Instruments @Inject() (cc: ControllerComponents, config: Configuration, injector: Injector, env: Environment)
    extends AbstractController(cc) {

  private lazy val lab: LabPools = {
    val name = config.get[String]("instruments.pools")
    injector.instanceOf(env.classLoader.loadClass(name)) match {
      case pools: LabPools => pools
      case other           => throw new IllegalStateException(s"instruments.pools: $name is not an instruments.LabPools")
    }
  }

  def pools = Action(Ok(lab.poolsJson).as(JSON))

  private lazy val timeline = new PoolTimeline(lab.gauges)

  def timelineStart(hz: Int) = Action {
    try {
      timeline.start(hz)
      Ok(Json.obj("hz" -> hz))
    } catch { case e: IllegalArgumentException => BadRequest(Json.obj("error" -> e.getMessage)) }
  }

  def timelineStop = Action(Ok(timeline.stop()).as(JSON))

  // A JDK Flight Recorder profile of the measured runs, for their flame graph (scripts/lab run --profile).
  private lazy val profile = new CpuProfile

  def profileStart(periodMs: Int) = Action {
    try {
      profile.start(periodMs)
      Ok(Json.obj("period_ms" -> periodMs))
    } catch { case e: IllegalArgumentException => BadRequest(Json.obj("error" -> e.getMessage)) }
  }

  def profileStop = Action {
    try Ok(profile.stop()).as(TEXT)
    catch { case e: IllegalStateException => Conflict(Json.obj("error" -> e.getMessage)) }
  }
}
