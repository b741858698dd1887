package work;

import akka.dispatch.DispatcherPrerequisites;
import akka.dispatch.ExecutorServiceConfigurator;
import akka.dispatch.ExecutorServiceFactory;
import com.typesafe.config.Config;
import java.util.concurrent.ThreadFactory;

// ANCHOR: configurator
/**
 * The executor of virtual-dispatcher (conf/application.conf): Akka 2.6 builds a
 * dispatcher's executor from the class named in its `executor` setting, through this
 * constructor. Every task gets a new virtual thread, so Akka's thread factory (which
 * makes platform threads) goes unused.
 */
public class VirtualThreadExecutorConfigurator extends ExecutorServiceConfigurator {
  public VirtualThreadExecutorConfigurator(Config config, DispatcherPrerequisites prerequisites) {
    super(config, prerequisites);
  }

  @Override
  public ExecutorServiceFactory createExecutorServiceFactory(String id, ThreadFactory threadFactory) {
    // Akka asks the factory for the executor when the dispatcher's first task arrives, and
    // again after it has shut an idle one down: on a JVM older than 21 that task fails,
    // with the reason (VirtualThreads.Unavailable).
    return VirtualThreads::newPerTaskExecutor;
  }
}
// ANCHOR_END: configurator
