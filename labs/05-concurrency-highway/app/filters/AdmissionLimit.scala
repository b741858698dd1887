package filters

import java.util.concurrent.atomic.AtomicInteger
import javax.inject.{Inject, Singleton}

import play.api.Configuration
import play.api.libs.streams.Accumulator
import play.api.mvc.{EssentialAction, EssentialFilter, Results}

import scala.concurrent.ExecutionContext.parasitic

// ANCHOR: admission
/** Admission control: at most `lab.admission-limit` requests inside the application at once.
  * The request that would go past the limit is answered 503 at once, without running its
  * action, instead of waiting behind the others. 0 (the lab's default) turns the filter off:
  * it then hands every request straight to the action. */
@Singleton
class AdmissionLimit @Inject() (config: Configuration) extends EssentialFilter {
  private val limit    = config.get[Int]("lab.admission-limit")
  private val inFlight = new AtomicInteger()
  // Health checks (the lab driver's probes) always pass: a probe refused under
  // load would make a busy server look dead.
  private val exempt = Set("/status", "/pools")

  def apply(next: EssentialAction): EssentialAction =
    if (limit <= 0) next
    else
      EssentialAction { request =>
        if (exempt(request.path)) next(request)
        else if (inFlight.incrementAndGet() > limit) {
          inFlight.decrementAndGet()
          // Retry-After: a polite client waits a second instead of retrying at once.
          Accumulator.done(Results.ServiceUnavailable.withHeaders("Retry-After" -> "1"))
        } else {
          // The request leaves when its result is ready (or it failed): one place frees again.
          val admitted =
            try next(request)
            catch { case e: Throwable => inFlight.decrementAndGet(); throw e }
          admitted
            .map { result => inFlight.decrementAndGet(); result }(parasitic)
            .recover { case e: Throwable => inFlight.decrementAndGet(); throw e }(parasitic)
        }
      }
}
// ANCHOR_END: admission
