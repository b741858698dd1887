package controllers

import akka.actor.ActorSystem
import instruments.{LabPools, PoolReport, PoolTimeline}
import javax.inject.{Inject, Singleton}
import play.api.libs.json.Json
import play.api.mvc.{AbstractController, ControllerComponents}
import work.BlockingWork

import scala.jdk.CollectionConverters._

/** A cheap liveness probe, and the pools the instruments read (labs/instruments): Play's and the offload pool. */
@Singleton
class Diagnostics @Inject() (cc: ControllerComponents, system: ActorSystem, work: BlockingWork)
    extends AbstractController(cc) with LabPools {

  private val Dispatchers = Map("default" -> "akka.actor.default-dispatcher", "offload" -> "offload-dispatcher")

  def status = Action(Ok("ok\n"))

  def poolsJson: String =
    Json.stringify(PoolReport.json(system.settings.config, Dispatchers) ++ Json.obj("work_ms" -> work.millis))

  def gauges: java.util.Map[String, PoolTimeline.Gauge] = PoolTimeline.dispatchers(system, Dispatchers.asJava)
}
