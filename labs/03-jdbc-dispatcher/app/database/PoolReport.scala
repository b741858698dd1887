package database

import akka.dispatch.ThreadPoolConfig
import com.typesafe.config.Config
import play.api.libs.json.{JsObject, Json}

import scala.jdk.CollectionConverters._

/**
 * What a dispatcher really has, computed the way Akka computes it, so that
 * nobody has to type a pool size into a prediction.
 */
object PoolReport {

  /** Threads a dispatcher runs its tasks on, from its configuration. */
  def threads(config: Config, dispatcherPath: String, cores: Int): (String, Int) = {
    val dispatcher = config.getConfig(dispatcherPath)
    val executor = dispatcher.getString("executor") match {
      case "default-executor" => dispatcher.getString("default-executor.fallback")
      case other              => other
    }
    val size = executor match {
      case "fork-join-executor" =>
        val fj = dispatcher.getConfig("fork-join-executor")
        ThreadPoolConfig.scaledPoolSize(
          fj.getInt("parallelism-min"), fj.getDouble("parallelism-factor"), fj.getInt("parallelism-max"))
      case "thread-pool-executor" =>
        val tp = dispatcher.getConfig("thread-pool-executor")
        if (tp.hasPath("fixed-pool-size") && tp.getString("fixed-pool-size") != "off") tp.getInt("fixed-pool-size")
        else
          ThreadPoolConfig.scaledPoolSize(
            tp.getInt("core-pool-size-min"), tp.getDouble("core-pool-size-factor"), tp.getInt("core-pool-size-max"))
      case other => throw new IllegalArgumentException(s"$dispatcherPath: unsupported executor $other")
    }
    (executor, size)
  }

  /** Threads alive now whose name shows they belong to the dispatcher. */
  def liveThreads(dispatcherPath: String): Int =
    Thread.getAllStackTraces.keySet.asScala.count(_.getName.contains(dispatcherPath))

  /** The JSON the lab driver reads: `pools.NAME.threads` feeds the prediction. */
  def json(config: Config, pools: Map[String, String]): JsObject = {
    val cores = Runtime.getRuntime.availableProcessors
    Json.obj(
      "available_processors" -> cores,
      "pools" -> JsObject(pools.toSeq.map { case (name, path) =>
        val (executor, size) = threads(config, path, cores)
        name -> Json.obj(
          "dispatcher"   -> path,
          "executor"     -> executor,
          "threads"      -> size,
          "live_threads" -> liveThreads(path)
        )
      })
    )
  }
}
