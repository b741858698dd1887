package controllers

import akka.actor.ActorSystem
import instruments.{LabPools, PoolReport, PoolTimeline}
import java.lang.management.ManagementFactory
import javax.inject.{Inject, Singleton}
import play.api.Configuration
import play.api.libs.json.{JsNull, JsObject, Json}
import play.api.mvc.{AbstractController, ControllerComponents}
import work.{BlockingWork, DatabaseUnavailable, OffloadExecutionContext, SleepQuery, VirtualThreads}

import scala.concurrent.Future
import scala.jdk.CollectionConverters._

/**
 * A cheap liveness probe, the query alone, HikariCP resized, and the pools the instruments read
 * (labs/instruments): the dispatchers, the virtual threads' carriers and the connections.
 */
@Singleton
class Diagnostics @Inject() (
    cc: ControllerComponents,
    system: ActorSystem,
    configuration: Configuration,
    work: BlockingWork,
    query: SleepQuery,
    offload: OffloadExecutionContext)
    extends AbstractController(cc) with LabPools {

  def status = Action(Ok("ok\n"))

  private val Dispatchers = Map(
    "default"     -> "akka.actor.default-dispatcher",
    "pool"        -> "offload-dispatcher",
    "per-request" -> "per-request-dispatcher")

  def poolsJson: String = {
    val report = PoolReport.json(system.settings.config, Dispatchers)
    // No bound of its own: a new virtual thread for every task. The JVM cannot list
    // virtual threads by dispatcher, so there is no live_threads.
    val virtual = Json.obj(
      "dispatcher" -> "virtual-dispatcher",
      "executor"   -> "virtual-thread-per-task",
      "threads"    -> JsNull)
    // A query holds its connection throughout: HikariCP's pool bounds the queries in flight.
    val connections = Json.obj(
      // Its size now: POST /connections may have changed it since the server started.
      "threads" -> query.connections.orElse(configuration.get[Int]("db.default.hikaricp.maximumPoolSize")).intValue,
      "connection_timeout_ms" -> configuration.underlying.getDuration("db.default.hikaricp.connectionTimeout").toMillis)
    // What runs the virtual threads: the JDK scheduler's ForkJoinPool. A virtual thread
    // pinned to its carrier holds one of these for as long as it blocks.
    val carriers = Json.obj(
      "executor" -> "virtual-thread-scheduler",
      "threads"  -> VirtualThreads.carriers)
    val pools = (report \ "pools").as[JsObject] ++
      Json.obj("virtual" -> virtual, "carriers" -> carriers, "connections" -> connections)
    Json.stringify(report ++ Json.obj(
      "pools"                -> pools,
      "java_version"         -> Runtime.version.feature,
      "java_runtime_version" -> System.getProperty("java.runtime.version"),
      "virtual_threads"      -> VirtualThreads.available,
      // The virtual-thread scheduler's parallelism: how many virtual threads run at once.
      "carriers"             -> VirtualThreads.carriers,
      // Whether the timeline has the scheduler's own gauges (carriers.busy, carriers.queued).
      "scheduler_gauges"     -> VirtualThreads.scheduler.isPresent,
      "work_ms"              -> work.millis,
      "query_ms"             -> query.queryMillis,
      "database_configured"  -> query.configured,
      // Platform threads only: ThreadMXBean does not count virtual threads.
      "jvm_threads"          -> ManagementFactory.getThreadMXBean.getThreadCount))
  }

  // Virtual threads have no pool to read: the JVM's platform threads (the timeline's own
  // jvm_threads) show their carriers, and from Java 24 on the scheduler itself says how many of
  // its carriers are busy and how many virtual threads are ready and wait for one.
  def gauges: java.util.Map[String, PoolTimeline.Gauge] = {
    val gauges = new java.util.LinkedHashMap[String, PoolTimeline.Gauge](PoolTimeline.dispatchers(system, Dispatchers.asJava))
    // ANCHOR: scheduler-gauges
    VirtualThreads.scheduler.ifPresent { scheduler =>
      gauges.put("carriers.busy", () => scheduler.mounted)
      gauges.put("carriers.queued", () => scheduler.queued)
      gauges.put("carriers.threads", () => scheduler.carriers)
    }
    // ANCHOR_END: scheduler-gauges
    Option(query.connectionPool).foreach { pool =>
      // A query holds its connection throughout; threads that want one wait in HikariCP.
      gauges.put("connections.active", () => pool.getActiveConnections.toLong)
      gauges.put("connections.idle", () => pool.getIdleConnections.toLong)
      gauges.put("connections.awaiting", () => pool.getThreadsAwaitingConnection.toLong)
    }
    gauges
  }

  /** HikariCP's pool set to `size` connections while the server runs (SleepQuery.resize). */
  def connections(size: Int) = Action {
    if (size < 1 || size > Diagnostics.MaxConnections)
      BadRequest(Json.obj("error" -> s"size must be 1..${Diagnostics.MaxConnections}"))
    else if (!query.configured) ServiceUnavailable(DatabaseUnavailable.NOT_CONFIGURED + "\n")
    else {
      query.resize(size)
      Ok(Json.obj("connections" -> size))
    }
  }

  /** The pg_sleep query alone, `runs` times one after another on one connection (SleepQuery.timeQueries). */
  def calibrate(runs: Int) = Action.async {
    if (runs < 1 || runs > Diagnostics.MaxCalibrationRuns)
      Future.successful(BadRequest(Json.obj("error" -> s"runs must be 1..${Diagnostics.MaxCalibrationRuns}")))
    else if (!query.configured) Future.successful(ServiceUnavailable(DatabaseUnavailable.NOT_CONFIGURED + "\n"))
    else
      Future {
        val millis = query.timeQueries(runs)
        def rounded(ms: Double) = BigDecimal(ms).setScale(3, BigDecimal.RoundingMode.HALF_UP)
        Ok(Json.obj(
          "runs"        -> runs,
          "warmup_runs" -> SleepQuery.CALIBRATION_WARMUP_RUNS,
          "mean_ms"     -> rounded(millis.sum / runs),
          "min_ms"      -> rounded(millis.min),
          "max_ms"      -> rounded(millis.max)))
      }(offload) // blocking: not on Play's default dispatcher
  }
}

object Diagnostics {
  val MaxCalibrationRuns = 1000
  // The throwaway cluster allows 100 connections (the lab driver asks for 90 at most).
  val MaxConnections = 100
}
