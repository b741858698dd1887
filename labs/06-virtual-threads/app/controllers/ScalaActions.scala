package controllers

import javax.inject.Inject
import play.api.mvc.{AbstractController, ControllerComponents}
import work.{BlockingWork, VirtualThreadContext}

import scala.concurrent.Future

/** Virtual threads from Scala, without an Akka dispatcher in between. */
class ScalaActions @Inject() (cc: ControllerComponents, work: BlockingWork, virtual: VirtualThreadContext)
    extends AbstractController(cc) {

  // ANCHOR: scala-virtual
  // A Future on the JDK's virtual-thread-per-task executor (VirtualThreadContext):
  // each request's work gets a new virtual thread, as on virtual-dispatcher.
  def onVirtualThread = Action.async {
    Future(Ok(s"done on ${work.run()}\n"))(virtual.context)
  }
  // ANCHOR_END: scala-virtual
}
