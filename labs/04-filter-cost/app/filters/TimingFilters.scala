package filters

import java.util.concurrent.atomic.LongAdder

import scala.concurrent.{ExecutionContext, Future}

import akka.stream.Materializer
import play.api.Logger
import play.api.mvc._

/** What both timing filters do once the result is there: a header and a DEBUG log line. */
object Timing {
  val HeaderName = "Server-Timing"
  private val log = Logger("access")

  def finish(request: RequestHeader, result: Result, startNanos: Long): Result = {
    val micros = (System.nanoTime - startNanos) / 1000
    if (log.isDebugEnabled) log.debug(s"${request.method} ${request.uri} ${result.header.status} ${micros}us")
    result.withHeaders(HeaderName -> s"app;dur=${micros / 1000.0}")
  }
}

// ANCHOR: logging-plain
/** Times each request and reports it, written as a `Filter`. */
final class TimingPlainFilter(implicit val mat: Materializer, ec: ExecutionContext) extends Filter with Counted {
  private val counter = new LongAdder

  def apply(next: RequestHeader => Future[Result])(request: RequestHeader): Future[Result] = {
    counter.increment()
    val start = System.nanoTime
    next(request).map(result => Timing.finish(request, result, start))
  }

  def calls: Long = counter.sum
}
// ANCHOR_END: logging-plain

// ANCHOR: logging-essential
/** The same timing filter as an `EssentialFilter`: it maps the accumulator's result. */
final class TimingEssentialFilter(implicit ec: ExecutionContext) extends EssentialFilter with Counted {
  private val counter = new LongAdder

  def apply(next: EssentialAction): EssentialAction = EssentialAction { request =>
    counter.increment()
    val start = System.nanoTime
    next(request).map(result => Timing.finish(request, result, start))
  }

  def calls: Long = counter.sum
}
// ANCHOR_END: logging-essential
