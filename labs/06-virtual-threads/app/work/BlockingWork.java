package work;

import com.typesafe.config.Config;
import javax.inject.Inject;
import javax.inject.Singleton;

/**
 * Stands in for a blocking call (JDBC, a file read, a legacy HTTP client):
 * the calling thread can do nothing else until it returns.
 */
@Singleton
public class BlockingWork {
  private final long millis;

  @Inject
  public BlockingWork(Config config) {
    this.millis = config.getLong("lab.work-ms");
  }

  public long millis() {
    return millis;
  }

  /**
   * Blocks the calling thread and returns a description of that thread. A virtual
   * thread has no name: its toString says "VirtualThread" and names its carrier.
   */
  public String run() {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while working", e);
    }
    return Thread.currentThread().toString();
  }
}
