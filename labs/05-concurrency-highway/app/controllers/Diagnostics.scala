package controllers

import akka.actor.ActorSystem
import javax.inject.{Inject, Singleton}
import play.api.libs.json.Json
import play.api.mvc.{AbstractController, ControllerComponents}
import work.{CpuProfile, Lanes, PoolReport, PoolTimeline}

import scala.jdk.CollectionConverters._

/** Endpoints for the lab driver: a cheap liveness probe, the pool sizes and their timeline. */
@Singleton
class Diagnostics @Inject() (cc: ControllerComponents, system: ActorSystem, lanes: Lanes)
    extends AbstractController(cc) {

  def status = Action(Ok("ok\n"))

  private val Dispatchers = Map("default" -> "akka.actor.default-dispatcher", "lanes" -> "lanes-dispatcher")

  def pools = Action {
    Ok(PoolReport.json(system.settings.config, Dispatchers) ++ Json.obj("work_ms" -> lanes.serviceMillis))
  }

  private lazy val timeline = new PoolTimeline(PoolTimeline.dispatchers(system, Dispatchers.asJava))

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
