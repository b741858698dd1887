package controllers

import akka.actor.ActorSystem
import com.zaxxer.hikari.HikariDataSource
import database.{SalesRepository, SizedDispatchers}
import instruments.{LabPools, PoolReport, PoolTimeline}
import javax.inject.{Inject, Singleton}
import play.api.db.Database
import play.api.libs.json.{JsObject, Json}
import play.api.mvc.{AbstractController, ControllerComponents}

import scala.jdk.CollectionConverters._

/**
 * A cheap liveness probe, the database's calibration, and the pools the instruments read
 * (labs/instruments): the dispatchers, HikariCP's connections and PostgreSQL's settings.
 */
@Singleton
class Diagnostics @Inject() (
    cc: ControllerComponents,
    system: ActorSystem,
    db: Database,
    sales: SalesRepository,
    sized: SizedDispatchers)
    extends AbstractController(cc) with LabPools {

  def status = Action(Ok("ok\n"))

  private def hikari = db.dataSource.unwrap(classOf[HikariDataSource])

  /** PostgreSQL settings that bound how many connections it can serve well. */
  private val Settings = Seq("max_connections", "shared_buffers", "work_mem", "fsync", "max_worker_processes")

  // The sized copies of database.dispatcher (SizedDispatchers) report as database-N.
  private def dispatcherIds =
    Seq("default" -> "akka.actor.default-dispatcher", "database" -> "database.dispatcher") ++
      sized.ids.asScala.toSeq.sortBy(_._1).map { case (threads, id) => s"database-$threads" -> id }

  def poolsJson: String = {
    val pool = hikari.getHikariPoolMXBean
    val dispatchers = PoolReport.json(sized.config.withFallback(system.settings.config), dispatcherIds.toMap)
    val connections = Json.obj(
      "threads"               -> hikari.getMaximumPoolSize, // a connection serves one query at a time
      "connection_timeout_ms" -> hikari.getConnectionTimeout,
      "active"                -> pool.getActiveConnections,
      "idle"                  -> pool.getIdleConnections,
      "awaiting"              -> pool.getThreadsAwaitingConnection,
      "timeouts"              -> sales.connectionTimeouts
    )
    val postgres = db.withConnection { connection =>
      val statement = connection.createStatement()
      try {
        def one(sql: String): String = {
          val rows = statement.executeQuery(sql)
          try { rows.next(); rows.getString(1) } finally rows.close()
        }
        Json.obj(
          "version"  -> one("SELECT version()"),
          "settings" -> JsObject(Settings.map(name => name -> Json.toJson(one(s"SHOW $name"))))
        )
      } finally statement.close()
    }
    val report = dispatchers ++ Json.obj("pools" -> ((dispatchers \ "pools").as[JsObject] + ("connections" -> connections)))
    Json.stringify(report ++ Json.obj(
      "query_ms"     -> sales.queryMillis,
      "query_jitter" -> sales.queryJitter,
      "postgresql"   -> postgres))
  }

  def gauges: java.util.Map[String, PoolTimeline.Gauge] = {
    val ids = new java.util.LinkedHashMap[String, String]()
    dispatcherIds.foreach { case (name, id) => ids.put(name, id) }
    val gauges = new java.util.LinkedHashMap[String, PoolTimeline.Gauge](PoolTimeline.dispatchers(system, ids))
    val pool = hikari.getHikariPoolMXBean
    // A query holds its connection throughout; threads that want one wait in HikariCP.
    gauges.put("connections.active", () => pool.getActiveConnections.toLong)
    gauges.put("connections.idle", () => pool.getIdleConnections.toLong)
    gauges.put("connections.awaiting", () => pool.getThreadsAwaitingConnection.toLong)
    gauges
  }

  /** A request's database work with no wait, `runs` times in a row: its cost alone (see SalesRepository.timeRequests). */
  def calibrate(runs: Int) = Action {
    if (runs < 1 || runs > 5000) BadRequest(Json.obj("error" -> "runs must be 1..5000"))
    else {
      // HikariCP opens the pool's connections in the background after start-up. Each one costs
      // PostgreSQL a backend and an authentication, which must not count as the queries' CPU.
      val filledIn = waitForFullPool()
      val millis   = sales.timeRequests(runs).sorted
      def rounded(ms: Double) = BigDecimal(ms).setScale(3, BigDecimal.RoundingMode.HALF_UP)
      Ok(Json.obj(
        "runs"              -> runs,
        "warmup_runs"       -> SalesRepository.CALIBRATION_WARMUP_RUNS,
        "median_ms"         -> rounded(millis(runs / 2)),
        "mean_ms"           -> rounded(millis.sum / runs),
        "pool_fill_wait_ms" -> filledIn))
    }
  }

  /** Waits (up to 30 s) until the pool holds all its connections; returns how long that took. */
  private def waitForFullPool(): Long = {
    val start    = System.nanoTime()
    val deadline = start + 30L * 1000 * 1000 * 1000
    while (hikari.getHikariPoolMXBean.getTotalConnections < hikari.getMaximumPoolSize && System.nanoTime() < deadline)
      Thread.sleep(10)
    (System.nanoTime() - start) / 1000000
  }
}
