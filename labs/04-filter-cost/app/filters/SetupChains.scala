package filters

import java.util.concurrent.atomic.LongAdder
import javax.inject.{Inject, Singleton}

import scala.concurrent.ExecutionContext

import akka.stream.Materializer
import play.api.Configuration
import play.api.http.EnabledFilters
import play.api.mvc.EssentialFilter

/** One named set-up's filters, and how many requests it was applied to. */
final class SetupChain(val name: String, val filters: Seq[EssentialFilter]) {
  private val counter = new LongAdder

  def applied(): Unit = counter.increment()
  def requests: Long = counter.sum
}

/**
 * Every set-up one server can measure side by side (`lab.setups`), each with
 * filter instances (and counters) of its own. `SetupRequestHandler` applies the
 * one a request names in its path.
 *
 * A name is a set-up of `LabFilters` (`essential`), with `-xN` for a chain of N
 * (`plain-x10`), or `play-defaults-no-csrf`: Play's defaults without the CSRF
 * filter, as `-Dplay.filters.disabled.0=play.filters.csrf.CSRFFilter` gives them.
 */
@Singleton
final class SetupChains @Inject() (config: Configuration, playDefaults: EnabledFilters)(
    implicit mat: Materializer,
    ec: ExecutionContext
) {
  import SetupChains._

  val byName: Map[String, SetupChain] =
    config.get[String]("lab.setups").split(",").map(_.trim).filter(_.nonEmpty).distinct.map { name =>
      name -> new SetupChain(name, chainFor(name).getOrElse {
        throw config.reportError(
          "lab.setups",
          s"lab.setups names '$name', which is not a set-up of this lab; use one of: " +
            s"${LabFilters.Setups.mkString(", ")}, $NoCsrf, with -xN after a chain's name (plain-x10)")
      })
    }.toMap

  private def chainFor(name: String): Option[Seq[EssentialFilter]] = name match {
    case NoCsrf => Some(playDefaults.filters.filterNot(_.getClass.getName == CsrfFilter))
    case Chain(kind, length) if ChainKinds(kind) && length.toInt >= 1 && length.toInt <= MaxLength =>
      LabFilters.chain(kind, length.toInt, playDefaults)
    case _ if !ChainKinds(name) => LabFilters.chain(name, 1, playDefaults)
    case _                      => None
  }
}

object SetupChains {
  val NoCsrf = "play-defaults-no-csrf"
  val CsrfFilter = "play.filters.csrf.CSRFFilter"
  private val ChainKinds = Set("plain", "essential", "java-plain", "java-essential")
  private val Chain = """(.+)-x(\d{1,3})""".r
  private val MaxLength = 100
}
