package controllers

import javax.inject.Inject

import akka.actor.ActorSystem
import filters.{Counted, LabFilters}
import play.api.libs.json.{JsNull, JsNumber, Json}
import play.api.mvc.{AbstractController, ControllerComponents}
import work.PoolReport

/** The measured action, and what the lab driver reads about the running server. */
class Diagnostics @Inject() (cc: ControllerComponents, system: ActorSystem, labFilters: LabFilters)
    extends AbstractController(cc) {

  // ANCHOR: status
  /** The action every set-up is measured against: as cheap as an action gets. */
  def status = Action(Ok("ok\n"))
  // ANCHOR_END: status

  /** The set-up, and each filter in the order Play applies them, with its request count. */
  def filters = Action {
    Ok(
      Json.obj(
        "setup"        -> labFilters.setup,
        "chain_length" -> labFilters.chainLength,
        "filters" -> labFilters.filters.map { filter =>
          Json.obj(
            "class" -> filter.getClass.getName,
            "calls" -> (filter match {
              case counted: Counted => JsNumber(counted.calls)
              case _                => JsNull // Play's own filters keep no count
            })
          )
        }
      )
    )
  }

  def pools = Action {
    Ok(PoolReport.json(system.settings.config, Map("default" -> "akka.actor.default-dispatcher")))
  }
}
