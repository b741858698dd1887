package work

import javax.inject.{Inject, Singleton}
import play.api.inject.ApplicationLifecycle

import scala.concurrent.{ExecutionContext, ExecutionContextExecutorService, Future}

// ANCHOR: scala-context
/**
 * Virtual threads without Akka: a Scala ExecutionContext straight on the JDK's
 * virtual-thread-per-task executor. Play does not manage it, so it is shut down
 * when the application stops.
 */
@Singleton
class VirtualThreadContext @Inject() (lifecycle: ApplicationLifecycle) {
  // None on a JVM without virtual threads: `context` then throws the reason.
  private val executor: Option[ExecutionContextExecutorService] =
    if (VirtualThreads.available) Some(ExecutionContext.fromExecutorService(VirtualThreads.newPerTaskExecutor()))
    else None

  def context: ExecutionContext = executor.getOrElse(throw new VirtualThreads.Unavailable)

  lifecycle.addStopHook(() => Future.successful(executor.foreach(_.shutdown())))
}
// ANCHOR_END: scala-context
