package filters

import java.util.concurrent.atomic.LongAdder

import scala.concurrent.Future

import akka.stream.Materializer
import play.api.mvc._

// ANCHOR: scala-plain
/** A `Filter` that does nothing but count and pass the request on. */
final class NoopPlainFilter(implicit val mat: Materializer) extends Filter with Counted {
  private val counter = new LongAdder

  def apply(next: RequestHeader => Future[Result])(request: RequestHeader): Future[Result] = {
    counter.increment()
    next(request)
  }

  def calls: Long = counter.sum
}
// ANCHOR_END: scala-plain

// ANCHOR: scala-essential
/** The same no-op as an `EssentialFilter`: it hands on the next action's accumulator untouched. */
final class NoopEssentialFilter extends EssentialFilter with Counted {
  private val counter = new LongAdder

  def apply(next: EssentialAction): EssentialAction = EssentialAction { request =>
    counter.increment()
    next(request)
  }

  def calls: Long = counter.sum
}
// ANCHOR_END: scala-essential
