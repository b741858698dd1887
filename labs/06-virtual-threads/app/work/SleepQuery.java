package work;

import com.typesafe.config.Config;
import com.zaxxer.hikari.HikariConfigMXBean;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.Optional;
import javax.inject.Inject;
import javax.inject.Provider;
import javax.inject.Singleton;
import play.db.Database;

/**
 * `SELECT pg_sleep(lab.query-ms)` through HikariCP: a query that holds its connection
 * for query-ms and costs PostgreSQL next to no CPU, so that the only limits are the
 * threads that wait for it and the connections (lab.connections).
 */
@Singleton
public class SleepQuery {
  /** Unmeasured queries before timeQueries measures: the connection and the JIT warm up. */
  public static final int CALIBRATION_WARMUP_RUNS = 3;

  private final boolean configured;
  // Asked for only when configured: without a database there is no pool to give one.
  private final Provider<Database> database;
  private final long queryMillis;

  @Inject
  public SleepQuery(Config config, Provider<Database> database) {
    this.configured = configured(config);
    this.database = database;
    this.queryMillis = config.getLong("lab.query-ms");
  }

  /** Whether the configuration names a database (application.conf: from JDBC_DATABASE_URL). */
  public static boolean configured(Config config) {
    return config.hasPath("db.default.url") && !config.getString("db.default.url").isBlank();
  }

  public boolean configured() {
    return configured;
  }

  /** HikariCP's pool, for the timeline; null without a database. */
  public HikariPoolMXBean connectionPool() {
    return configured ? dataSource().getHikariPoolMXBean() : null;
  }

  /** The pool's size now (it may have been resized); empty without a database. */
  public Optional<Integer> connections() {
    return configured ? Optional.of(dataSource().getHikariConfigMXBean().getMaximumPoolSize()) : Optional.empty();
  }

  /**
   * Sets the pool to `size` connections while the server runs, through HikariCP's
   * HikariConfigMXBean, whose maximumPoolSize and minimumIdle take effect at once: a larger
   * pool opens connections as queries wait for them; a smaller one evicts the connections it
   * has (idle ones at once, busy ones when they come back) and opens up to `size` again.
   */
  public synchronized void resize(int size) {
    HikariDataSource source = dataSource();
    HikariConfigMXBean pool = source.getHikariConfigMXBean();
    boolean smaller = size < pool.getMaximumPoolSize();
    pool.setMaximumPoolSize(size);
    pool.setMinimumIdle(size);
    if (smaller) {
      source.getHikariPoolMXBean().softEvictConnections();
    }
  }

  private HikariDataSource dataSource() {
    try {
      return database.get().getDataSource().unwrap(HikariDataSource.class);
    } catch (SQLException e) {
      throw new IllegalStateException("the database's pool is not HikariCP's: " + e.getMessage(), e);
    }
  }

  public long queryMillis() {
    return queryMillis;
  }

  // ANCHOR: query
  // Blocks the calling thread twice over: until HikariCP hands it a connection,
  // then for the round trip to PostgreSQL. Returns the thread it ran on.
  public String run() {
    try (Connection connection = connection()) {
      sleepInDatabase(connection);
      return Thread.currentThread().toString();
    } catch (SQLTransientConnectionException e) {
      // HikariCP: no connection came free within connectionTimeout.
      throw new DatabaseUnavailable("no database connection: " + e.getMessage(), e);
    } catch (SQLException e) {
      throw new IllegalStateException("the pg_sleep query failed: " + e.getMessage(), e);
    }
  }

  private void sleepInDatabase(Connection connection) throws SQLException {
    try (PreparedStatement sleep = connection.prepareStatement("SELECT pg_sleep(?)")) {
      sleep.setDouble(1, queryMillis / 1000.0);
      sleep.execute();
    }
  }
  // ANCHOR_END: query

  private Connection connection() {
    if (!configured) {
      throw DatabaseUnavailable.notConfigured();
    }
    return database.get().getConnection();
  }

  /**
   * What one query takes when nothing else runs: `runs` queries one after another on
   * one connection, after CALIBRATION_WARMUP_RUNS unmeasured ones. Returns each one's
   * wall-clock milliseconds: query-ms plus the round trip and PostgreSQL's own work.
   */
  public double[] timeQueries(int runs) {
    try (Connection connection = connection()) {
      for (int i = 0; i < CALIBRATION_WARMUP_RUNS; i++) {
        sleepInDatabase(connection);
      }
      double[] millis = new double[runs];
      for (int i = 0; i < runs; i++) {
        long start = System.nanoTime();
        sleepInDatabase(connection);
        millis[i] = (System.nanoTime() - start) / 1e6;
      }
      return millis;
    } catch (SQLTransientConnectionException e) {
      throw new DatabaseUnavailable("no database connection: " + e.getMessage(), e);
    } catch (SQLException e) {
      throw new IllegalStateException("the pg_sleep query failed: " + e.getMessage(), e);
    }
  }
}
