package controllers

import javax.inject.Inject
import play.api.mvc.{AbstractController, ControllerComponents}
import work.{BlockingWork, OffloadContext}

import scala.concurrent.Future

/** The Scala side of the lab: the same two actions as JavaActions. */
class ScalaActions @Inject() (cc: ControllerComponents, work: BlockingWork, offload: OffloadContext)
    extends AbstractController(cc) {

  // ANCHOR: scala-blocking
  // Action { ... } runs its body on Play's default dispatcher.
  def blocking = Action {
    Ok(s"done on ${work.run()}\n")
  }
  // ANCHOR_END: scala-blocking

  // ANCHOR: scala-offloaded
  // Action.async only says "I return a Future"; what moves the work is the
  // execution context the Future runs on.
  def offloaded = Action.async {
    Future(Ok(s"done on ${work.run()}\n"))(offload)
  }
  // ANCHOR_END: scala-offloaded
}
