package controllers;

import akka.actor.ActorSystem;
import com.fasterxml.jackson.databind.node.ObjectNode;
import instruments.LabPools;
import instruments.PoolTimeline;
import instruments.javadsl.PoolReport;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.function.Supplier;
import javax.inject.Inject;
import javax.inject.Singleton;
import play.Environment;
import play.libs.Json;
import play.libs.concurrent.ClassLoaderExecution;
import play.libs.concurrent.ClassLoaderExecutionContext;
import play.mvc.Controller;
import play.mvc.Result;
import work.BlockingWork;

/**
 * Liveness, class loaders, and the pools the instruments read (labs/instruments): Play's, the
 * offload pool and the common pool.
 */
@Singleton
public class Diagnostics extends Controller implements LabPools {
  private final ActorSystem system;
  private final BlockingWork work;
  private final ClassLoaderExecutionContext playContext;
  private final Environment environment;

  @Inject
  public Diagnostics(ActorSystem system, BlockingWork work,
      ClassLoaderExecutionContext playContext, Environment environment) {
    this.system = system;
    this.work = work;
    this.playContext = playContext;
    this.environment = environment;
  }

  /** The dispatchers, and the common pool where the JDK uses one (not on a single core). */
  @Override
  public Map<String, PoolTimeline.Gauge> gauges() {
    Map<String, String> dispatchers = new LinkedHashMap<>();
    dispatchers.put("default", "akka.actor.default-dispatcher");
    dispatchers.put("offload", "offload-dispatcher");
    Map<String, PoolTimeline.Gauge> gauges = new LinkedHashMap<>(PoolTimeline.dispatchers(system, dispatchers));
    if (new CompletableFuture<Void>().defaultExecutor() == ForkJoinPool.commonPool()) {
      gauges.putAll(PoolTimeline.executor("commonpool", ForkJoinPool.commonPool()));
    }
    return gauges;
  }

  public Result status() {
    return ok("ok\n");
  }

  /** The JSON the lab driver reads: `pools.NAME.threads` feeds each prediction. */
  @Override
  public String poolsJson() {
    ObjectNode pools = Json.newObject();
    pools.set("default", PoolReport.dispatcher(system.settings().config(), "akka.actor.default-dispatcher"));
    pools.set("offload", PoolReport.dispatcher(system.settings().config(), "offload-dispatcher"));
    pools.set("commonpool", PoolReport.commonPool());
    ObjectNode report = Json.newObject();
    report.put("available_processors", Runtime.getRuntime().availableProcessors());
    report.set("pools", pools);
    report.put("work_ms", work.millis());
    PoolReport.addProcess(report);
    return Json.stringify(report);
  }

  // ANCHOR: classloader
  /**
   * What a continuation sees when it runs on the common pool (a thread Play
   * did not make), on the same pool wrapped by ClassLoaderExecution, or
   * through ClassLoaderExecutionContext.current() (Play's pool).
   */
  public CompletionStage<Result> classLoader(String where) {
    // A lambda, not ForkJoinPool.commonPool() itself: CompletableFuture would
    // swap the bare common pool for a thread per task when its parallelism is 1.
    Executor commonPool = task -> ForkJoinPool.commonPool().execute(task);
    Executor executor;
    switch (where) {
      case "commonpool":
        executor = commonPool;
        break;
      case "commonpool-wrapped":
        executor = ClassLoaderExecution.fromThread(commonPool);
        break;
      case "play":
        executor = playContext.current();
        break;
      default:
        return CompletableFuture.completedFuture(
            badRequest("where: commonpool, commonpool-wrapped or play\n"));
    }
    Supplier<ObjectNode> look = () -> {
      ClassLoader loader = Thread.currentThread().getContextClassLoader();
      ObjectNode seen = Json.newObject();
      seen.put("thread", Thread.currentThread().getName());
      seen.put("context_class_loader", String.valueOf(loader));
      seen.put("is_application_class_loader", loader == environment.classLoader());
      seen.put("finds_application_classes", canLoad(loader, AsyncActions.class.getName()));
      return seen;
    };
    return CompletableFuture.supplyAsync(look, executor).thenApply(seen -> ok(seen));
  }
  // ANCHOR_END: classloader

  /** What a library does when it loads a class by name (JPA, Jackson modules, ServiceLoader). */
  private static boolean canLoad(ClassLoader loader, String className) {
    try {
      Class.forName(className, false, loader);
      return true;
    } catch (ClassNotFoundException e) {
      return false;
    }
  }
}
