package controllers;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import javax.inject.Inject;
import play.libs.concurrent.ClassLoaderExecutionContext;
import play.libs.ws.WSClient;
import play.mvc.Controller;
import play.mvc.Http;
import play.mvc.Result;
import work.BlockingWork;
import work.DownstreamTimer;
import work.OffloadExecutionContext;

/**
 * One piece of blocking work (lab.work-ms of it), run five ways. Every
 * response names the thread the work ran on, so a test (or curl) can see
 * which pool each variant really used.
 */
public class AsyncActions extends Controller {
  private final BlockingWork work;
  private final OffloadExecutionContext offload;
  private final ClassLoaderExecutionContext playContext;
  private final WSClient ws;
  private final DownstreamTimer downstreamTimer;

  @Inject
  public AsyncActions(BlockingWork work, OffloadExecutionContext offload,
      ClassLoaderExecutionContext playContext, WSClient ws, DownstreamTimer downstreamTimer) {
    this.work = work;
    this.offload = offload;
    this.playContext = playContext;
    this.ws = ws;
    this.downstreamTimer = downstreamTimer;
  }

  private static Result done(String thread) {
    return ok("done on " + thread + "\n");
  }

  // ANCHOR: blocking
  // 1. Plain blocking: the action runs on Play's default dispatcher and
  //    holds one of its threads for the whole of the work.
  public Result blocking() {
    return done(work.run());
  }
  // ANCHOR_END: blocking

  // ANCHOR: commonpool
  // 2. "Async" with no executor: the work goes wherever CompletableFuture
  //    sends it by default -- ForkJoinPool.commonPool(), sized by the JVM for
  //    CPU-bound work (cores - 1), not for waiting.
  public CompletionStage<Result> commonPool() {
    return CompletableFuture.supplyAsync(work::run).thenApply(AsyncActions::done);
  }
  // ANCHOR_END: commonpool

  // ANCHOR: default-ec
  // 3. Async in form only: playContext.current() is Play's default
  //    dispatcher, the very pool that serves requests. The action returns at
  //    once, but the work still holds one of the same few threads.
  public CompletionStage<Result> defaultEc() {
    return CompletableFuture.supplyAsync(work::run, playContext.current())
        .thenApply(AsyncActions::done);
  }
  // ANCHOR_END: default-ec

  // ANCHOR: custom-ec
  // 4. The recommended pattern: blocking work on a pool sized for it, and
  //    the continuation back on Play's pool with Play's class loader.
  public CompletionStage<Result> customEc() {
    return CompletableFuture.supplyAsync(work::run, offload)
        .thenApplyAsync(AsyncActions::done, playContext.current());
  }
  // ANCHOR_END: custom-ec

  // ANCHOR: ws
  // 5. Waiting without blocking: Play WS sends the request and frees the
  //    thread; the continuation runs when the response arrives.
  public CompletionStage<Result> ws(Http.Request request) {
    // The Host header is safe to reuse here: play.filters.hosts.allowed only
    // lets localhost and 127.0.0.1 through, so this always calls this server.
    String url = "http://" + request.host() + "/downstream";
    return ws.url(url).get()
        .thenApplyAsync(response -> ok("downstream said " + response.getBody()),
            playContext.current());
  }
  // ANCHOR_END: ws

  // ANCHOR: downstream
  // The slow service: answers after work-ms, but holds no thread meanwhile
  // (one timer thread completes every pending reply when it is due).
  public CompletionStage<Result> downstream() {
    return downstreamTimer.after(Duration.ofMillis(work.millis()),
        () -> ok("slept without a thread\n"));
  }
  // ANCHOR_END: downstream
}
