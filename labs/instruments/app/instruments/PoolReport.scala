package instruments

import akka.Version
import akka.dispatch.ThreadPoolConfig
import com.typesafe.config.Config
import java.lang.management.ManagementFactory
import play.api.libs.json.{JsNull, JsNumber, JsObject, JsString, JsValue, Json}

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

  /**
   * CPU time the whole JVM has used so far, in seconds (null where the JVM cannot tell).
   * The driver reads it before and after a run when the load comes from another machine,
   * whose /proc cannot see this process.
   */
  def processCpuSeconds: JsValue = ManagementFactory.getOperatingSystemMXBean match {
    case os: com.sun.management.OperatingSystemMXBean if os.getProcessCpuTime >= 0 =>
      JsNumber(BigDecimal(os.getProcessCpuTime, 9)) // nanoseconds
    case _ => JsNull
  }

  /**
   * Time the JIT compiler has spent compiling so far, in seconds (null where the JVM cannot
   * tell). While it keeps rising the server is still warming up: the driver waits for it
   * to go quiet before it measures a CPU-bound set-up.
   */
  def jitCompileSeconds: JsValue = Option(ManagementFactory.getCompilationMXBean) match {
    case Some(jit) if jit.isCompilationTimeMonitoringSupported => JsNumber(BigDecimal(jit.getTotalCompilationTime, 3))
    case _                                                     => JsNull
  }

  /** Words that mark a -D key as a secret's, in any case ("pass" also covers password, passwd). */
  val SecretWords: Seq[String] = Seq("secret", "pass", "key", "token", "credential")

  /** Whether a -D key names a secret (`play.http.secret.key`, `db.default.pass`, `api.token`). */
  def isSecret(key: String): Boolean = SecretWords.exists(key.toLowerCase(java.util.Locale.ROOT).contains)

  /** The -Dkey=value options among a JVM's arguments, secrets left out. */
  def properties(arguments: java.util.List[String]): JsObject = JsObject(
    arguments.asScala.toSeq
      .filter(_.startsWith("-D"))
      .map(_.drop(2).split("=", 2))
      .collect {
        case Array(key, value) if !isSecret(key) => key -> JsString(value)
      })

  /**
   * The -Dkey=value options this JVM was started with, secrets left out: a driver on another
   * machine compares them with the set-up it means to measure.
   */
  def commandLineProperties: JsObject = properties(ManagementFactory.getRuntimeMXBean.getInputArguments)

  /** The actor library this server runs on and its version: "Akka 2.6.21" or "Pekko 1.0.3". */
  def actors: String = (if (Version.getClass.getName.startsWith("org.apache.pekko.")) "Pekko " else "Akka ") + Version.current

  /** The JSON the lab driver reads: `pools.NAME.threads` feeds the prediction. */
  def json(config: Config, pools: Map[String, String]): JsObject = {
    val cores = Runtime.getRuntime.availableProcessors
    Json.obj(
      "process_cpu_seconds" -> processCpuSeconds,
      "jit_compile_seconds" -> jitCompileSeconds,
      "properties" -> commandLineProperties,
      "available_processors" -> cores,
      "play"                 -> play.core.PlayVersion.current,
      "actors"               -> actors,
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
