package controllers

import javax.inject.{Inject, Singleton}

import akka.actor.ActorSystem
import filters.{Counted, LabFilters, SetupChains}
import instruments.{LabPools, PoolReport, PoolTimeline}
import play.api.libs.json.{JsNull, JsNumber, JsObject, Json}
import play.api.mvc.{AbstractController, ControllerComponents, EssentialFilter}

import scala.jdk.CollectionConverters._

/** The measured action, the filters the server applies, and the pool the instruments read (labs/instruments). */
@Singleton
class Diagnostics @Inject() (cc: ControllerComponents, system: ActorSystem, labFilters: LabFilters,
    chains: SetupChains)
    extends AbstractController(cc) with LabPools {

  // ANCHOR: status
  /** The action every set-up is measured against: as cheap as an action gets. */
  def status = Action(Ok("ok\n"))
  // ANCHOR_END: status

  /** The same action; the request handler picked the filter chain from the path. */
  def statusBehind(setup: String) = status

  /** The set-up, and each filter in the order Play applies them, with its request count. */
  def filters = Action {
    Ok(
      Json.obj(
        "setup"        -> labFilters.setup,
        "chain_length" -> labFilters.chainLength,
        "filters"      -> describe(labFilters.filters),
        // The chains requests choose by path (/setup/NAME/status), each with its own counts.
        "setups" -> JsObject(chains.byName.toSeq.sortBy(_._1).map { case (name, chain) =>
          name -> Json.obj("requests" -> chain.requests, "filters" -> describe(chain.filters))
        })
      )
    )
  }

  private def describe(chain: Seq[EssentialFilter]) = chain.map { filter =>
    Json.obj(
      "class" -> filter.getClass.getName,
      "calls" -> (filter match {
        case counted: Counted => JsNumber(counted.calls)
        case _                => JsNull // Play's own filters keep no count
      })
    )
  }

  private val Dispatchers = Map("default" -> "akka.actor.default-dispatcher")

  def poolsJson: String = Json.stringify(PoolReport.json(system.settings.config, Dispatchers))

  def gauges: java.util.Map[String, PoolTimeline.Gauge] = PoolTimeline.dispatchers(system, Dispatchers.asJava)
}
