package database;

import akka.actor.ActorSystem;
import akka.dispatch.DispatcherConfigurator;
import akka.dispatch.Dispatchers;
import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import java.util.Collections;
import java.util.Map;
import java.util.TreeMap;
import javax.inject.Inject;
import javax.inject.Singleton;
import scala.concurrent.ExecutionContextExecutor;

/**
 * database.dispatcher again at other sizes, one per entry of `lab.dispatcher-sizes` (e.g. "4,16,32"),
 * so that the lab driver can measure several sizes on one server instead of starting one per size.
 *
 * <p>Each is database.dispatcher's configuration with another fixed-pool-size, under the id
 * `database-dispatcher-N-threads`. Akka looks a dispatcher up by its id, reading its configuration
 * once; Dispatchers.registerConfigurator adds one that application.conf does not name, as Akka's
 * BalancingPool does (akka.dispatch.Dispatchers). A request picks one by its size: /sales/sized?threads=N.
 */
@Singleton
public class SizedDispatchers {
  private final Map<Integer, ExecutionContextExecutor> byThreads = new TreeMap<>();
  private final Map<Integer, String> ids = new TreeMap<>();
  private Config config = ConfigFactory.empty();

  @Inject
  public SizedDispatchers(ActorSystem system, Config appConfig) {
    Dispatchers dispatchers = system.dispatchers();
    Config database = appConfig.getConfig("database.dispatcher");
    for (String size : appConfig.getString("lab.dispatcher-sizes").split(",")) {
      if (size.isBlank()) {
        continue;
      }
      int threads = Integer.parseInt(size.trim());
      if (threads < 1) {
        throw new IllegalArgumentException("lab.dispatcher-sizes: sizes must be at least 1, not " + threads);
      }
      // The id names the threads too (application-database-dispatcher-16-threads-3), and no id
      // is part of another: /pools counts a dispatcher's live threads by name.
      String id = "database-dispatcher-" + threads + "-threads";
      Config one =
          ConfigFactory.parseMap(Map.of("id", id, "thread-pool-executor.fixed-pool-size", threads))
              .withFallback(database)
              .withFallback(dispatchers.defaultDispatcherConfig());
      dispatchers.registerConfigurator(id, new DispatcherConfigurator(one, dispatchers.prerequisites()));
      byThreads.put(threads, dispatchers.lookup(id));
      ids.put(threads, id);
      config = config.withFallback(one.atKey(id));
    }
  }

  /** The dispatcher with this many threads, or null if lab.dispatcher-sizes has no such size. */
  public ExecutionContextExecutor withThreads(int threads) {
    return byThreads.get(threads);
  }

  /** Size -> dispatcher id, for /pools. */
  public Map<Integer, String> ids() {
    return Collections.unmodifiableMap(ids);
  }

  /** The dispatchers' configuration at their ids, for /pools (PoolReport reads sizes from config). */
  public Config config() {
    return config;
  }
}
