package controllers;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.inject.Inject;
import play.mvc.Controller;
import play.mvc.Result;
import work.BlockingWork;
import work.OffloadExecutionContext;

/** The Java side of the lab: one action that blocks in place, one that moves the work. */
public class JavaActions extends Controller {
  private final BlockingWork work;
  private final OffloadExecutionContext offload;

  @Inject
  public JavaActions(BlockingWork work, OffloadExecutionContext offload) {
    this.work = work;
    this.offload = offload;
  }

  // ANCHOR: java-blocking
  // Runs on Play's default dispatcher, and holds one of its few threads
  // for the whole duration of the work.
  public Result blocking() {
    String thread = work.run();
    return ok("done on " + thread + "\n");
  }
  // ANCHOR_END: java-blocking

  // ANCHOR: java-offloaded
  // Hands the work to offload-dispatcher and returns at once; the default
  // dispatcher's thread is free again while the work runs.
  public CompletionStage<Result> offloaded() {
    return CompletableFuture.supplyAsync(
        () -> ok("done on " + work.run() + "\n"), offload.current());
  }
  // ANCHOR_END: java-offloaded
}
