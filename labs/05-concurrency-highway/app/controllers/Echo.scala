package controllers

import javax.inject.Inject
import play.api.mvc.{AbstractController, ControllerComponents}
import work.Lanes

import scala.concurrent.Future

/** The lab's two endpoints: a pure-CPU JSON echo, and the same echo behind a fixed service time. */
class Echo @Inject() (cc: ControllerComponents, lanes: Lanes) extends AbstractController(cc) {

  // ANCHOR: echo
  // parse.json reads the body into a JsValue (and answers 400 to anything
  // that is not JSON); Ok(json) serialises it again. Only CPU work, on
  // Play's default dispatcher: the server's cores are the lanes.
  def echo = Action(parse.json) { request =>
    Ok(request.body)
  }
  // ANCHOR_END: echo

  // ANCHOR: fixed
  // The same echo, but each request first holds one of the pool's threads for
  // exactly lab.work-ms: a road with a known number of lanes and a known
  // time to cross it.
  def fixed = Action.async(parse.json) { request =>
    Future {
      lanes.serve()
      Ok(request.body)
    }(lanes)
  }
  // ANCHOR_END: fixed
}
