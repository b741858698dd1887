package controllers

import akka.actor.ActorSystem
import javax.inject.Inject
import play.api.libs.json.Json
import play.api.mvc.{AbstractController, ControllerComponents}
import work.{Lanes, PoolReport}

/** Endpoints for the lab driver: a cheap liveness probe and the pool sizes. */
class Diagnostics @Inject() (cc: ControllerComponents, system: ActorSystem, lanes: Lanes)
    extends AbstractController(cc) {

  def status = Action(Ok("ok\n"))

  def pools = Action {
    val report = PoolReport.json(
      system.settings.config,
      Map("default" -> "akka.actor.default-dispatcher", "lanes" -> "lanes-dispatcher"))
    Ok(report ++ Json.obj("work_ms" -> lanes.serviceMillis))
  }
}
