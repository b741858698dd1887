package controllers

import akka.actor.ActorSystem
import javax.inject.{Inject, Singleton}
import play.api.libs.json.Json
import play.api.mvc.{AbstractController, ControllerComponents}
import work.{BlockingWork, PoolReport, PoolTimeline}

import scala.jdk.CollectionConverters._

/** Endpoints for the lab driver: a cheap liveness probe, the pool sizes and their timeline. */
@Singleton
class Diagnostics @Inject() (cc: ControllerComponents, system: ActorSystem, work: BlockingWork)
    extends AbstractController(cc) {

  private val Dispatchers = Map("default" -> "akka.actor.default-dispatcher", "offload" -> "offload-dispatcher")

  def status = Action(Ok("ok\n"))

  def pools = Action {
    Ok(PoolReport.json(system.settings.config, Dispatchers) ++ Json.obj("work_ms" -> work.millis))
  }

  private lazy val timeline = new PoolTimeline(PoolTimeline.dispatchers(system, Dispatchers.asJava))

  def timelineStart(hz: Int) = Action {
    try {
      timeline.start(hz)
      Ok(Json.obj("hz" -> hz))
    } catch { case e: IllegalArgumentException => BadRequest(Json.obj("error" -> e.getMessage)) }
  }

  def timelineStop = Action(Ok(timeline.stop()).as(JSON))
}
