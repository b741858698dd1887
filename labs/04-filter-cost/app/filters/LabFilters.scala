package filters

import javax.inject.{Inject, Singleton}

import scala.concurrent.ExecutionContext

import akka.stream.Materializer
import play.api.Configuration
import play.api.http.{EnabledFilters, HttpFilters}
import play.api.mvc.EssentialFilter

/**
 * The filter list Play applies to every request, chosen by `lab.filters` and
 * `lab.chain-length` (system properties or config), never by editing code.
 *
 * A singleton, so that the /filters endpoint sees the very instances (and
 * counters) that Play's request handler uses.
 */
// ANCHOR: lab-filters
@Singleton
final class LabFilters @Inject() (config: Configuration, playDefaults: EnabledFilters)(
    implicit mat: Materializer,
    ec: ExecutionContext
) extends HttpFilters {

  val setup: String = config.get[String]("lab.filters")
  val chainLength: Int = config.get[Int]("lab.chain-length")

  if (chainLength < 1)
    throw config.reportError("lab.chain-length", s"lab.chain-length must be at least 1 (got $chainLength)")

  override val filters: Seq[EssentialFilter] =
    LabFilters.chain(setup, chainLength, playDefaults).getOrElse {
      throw config.reportError(
        "lab.filters",
        s"lab.filters = '$setup' is not a set-up of this lab; use one of: ${LabFilters.Setups.mkString(", ")}")
    }
}

object LabFilters {
  val Setups: Seq[String] = Seq("none", "play-defaults", "plain", "essential", "java-plain", "java-essential",
    "logging-plain", "logging-essential")

  /** A fresh chain of the set-up's filters (None: no such set-up). */
  def chain(setup: String, chainLength: Int, playDefaults: EnabledFilters)(
      implicit mat: Materializer,
      ec: ExecutionContext
  ): Option[Seq[EssentialFilter]] = PartialFunction.condOpt(setup) {
    case "none"              => Nil
    case "play-defaults"     => playDefaults.filters
    case "plain"             => Seq.fill(chainLength)(new NoopPlainFilter)
    case "essential"         => Seq.fill(chainLength)(new NoopEssentialFilter)
    case "java-plain"        => Seq.fill(chainLength)(new JavaNoopPlainFilter(mat))
    case "java-essential"    => Seq.fill(chainLength)(new JavaNoopEssentialFilter)
    case "logging-plain"     => Seq(new TimingPlainFilter)
    case "logging-essential" => Seq(new TimingEssentialFilter)
  }
}
// ANCHOR_END: lab-filters
