package filters

import javax.inject.{Inject, Provider}

import play.api.OptionalDevContext
import play.api.http.{HttpConfiguration, HttpErrorHandler, HttpFilters, JavaCompatibleHttpRequestHandler}
import play.api.libs.streams.Accumulator
import play.api.mvc.{EssentialAction, Handler, RequestHeader, Results}
import play.api.routing.Router
import play.core.WebCommands
import play.core.j.JavaHandlerComponents

/**
 * Play's default request handler, which also lets a request choose its filter
 * chain: `/setup/plain-x10/status` goes through the `plain-x10` chain of
 * `SetupChains`, so one warmed-up server can measure every set-up. Any other
 * path goes through the server's own chain (`lab.filters`), untouched.
 *
 * The chain is applied exactly as Play applies its filters: Play's
 * DefaultHttpRequestHandler.filterAction folds them around the routed action on
 * every request, `filters.foldRight(next)(_.apply(_))`; only the list differs.
 */
// ANCHOR: setup-handler
final class SetupRequestHandler @Inject() (
    webCommands: WebCommands,
    optDevContext: OptionalDevContext,
    router: Provider[Router],
    errorHandler: HttpErrorHandler,
    configuration: HttpConfiguration,
    filters: HttpFilters,
    handlerComponents: JavaHandlerComponents,
    chains: SetupChains
) extends JavaCompatibleHttpRequestHandler(
      webCommands, optDevContext, router, errorHandler, configuration, filters, handlerComponents) {

  import SetupRequestHandler.Prefix

  override protected def filterHandler(request: RequestHeader, handler: Handler): Handler =
    (request.path, handler) match {
      case (path, action: EssentialAction) if path.startsWith(Prefix) =>
        val end = path.indexOf('/', Prefix.length)
        val name = path.substring(Prefix.length, if (end < 0) path.length else end)
        chains.byName.get(name) match {
          case Some(chain) =>
            chain.applied()
            chain.filters.foldRight(action)(_.apply(_))
          case None =>
            EssentialAction(_ =>
              Accumulator.done(Results.NotFound(s"no set-up '$name' on this server (lab.setups)\n")))
        }
      case _ => super.filterHandler(request, handler)
    }
}
// ANCHOR_END: setup-handler

object SetupRequestHandler {
  val Prefix = "/setup/"
}
