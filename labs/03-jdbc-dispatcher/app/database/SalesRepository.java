package database;

import com.typesafe.config.Config;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.inject.Inject;
import javax.inject.Singleton;
import play.db.Database;

/** Revenue per product category in one region: a real query against PostgreSQL. */
@Singleton
public class SalesRepository {
  public static final int REGIONS = 16;
  /** Unmeasured runs of the query before timeQueries measures: PostgreSQL's caches warm up. */
  public static final int CALIBRATION_WARMUP_RUNS = 10;

  private final Database db;
  private final long queryMillis;
  private final double queryJitter;
  private final AtomicLong connectionTimeouts = new AtomicLong();

  @Inject
  public SalesRepository(Database db, Config config) {
    this.db = db;
    this.queryMillis = config.getLong("lab.query-ms");
    this.queryJitter = config.getDouble("lab.query-jitter");
    if (queryJitter < 0 || queryJitter > 1) {
      throw new IllegalArgumentException("lab.query-jitter must be between 0 and 1, not " + queryJitter);
    }
  }

  public long queryMillis() {
    return queryMillis;
  }

  public double queryJitter() {
    return queryJitter;
  }

  /** Requests that gave up waiting for a connection (HikariCP's connectionTimeout). */
  public long connectionTimeouts() {
    return connectionTimeouts.get();
  }

  public record CategorySales(String category, long orders, double revenue) {}

  public record RegionReport(int region, String thread, long queryMs, List<CategorySales> categories) {}

  /** Thrown when no connection became free within HikariCP's connectionTimeout. */
  public static class NoConnection extends RuntimeException {
    NoConnection(Throwable cause) {
      super(cause.getMessage(), cause);
    }
  }

  public RegionReport regionReport(int region) {
    return regionReport(region, queryMillis, queryJitter);
  }

  /** The same with another jitter (0..1) for this request's wait: the sweep's lockstep steps. */
  public RegionReport regionReport(int region, double jitter) {
    if (jitter < 0 || jitter > 1) {
      throw new IllegalArgumentException("jitter must be between 0 and 1, not " + jitter);
    }
    return regionReport(region, queryMillis, jitter);
  }

  // ANCHOR: query
  // Blocks the calling thread twice over: first until HikariCP hands it a
  // connection, then for the whole round trip to PostgreSQL.
  private RegionReport regionReport(int region, long waitMillis, double jitter) {
    Connection connection;
    try {
      connection = db.getConnection();
    } catch (Exception e) {
      // HikariCP's SQLTransientConnectionException, passed through unchecked by Play.
      Throwable timeout = e instanceof SQLTransientConnectionException ? e : e.getCause();
      if (timeout instanceof SQLTransientConnectionException) {
        connectionTimeouts.incrementAndGet();
        throw new NoConnection(timeout);
      }
      throw e;
    }
    try (connection) {
      waitInDatabase(connection, waitMillis, jitter);
      return new RegionReport(
          region, Thread.currentThread().getName(), waitMillis, categories(connection, region));
    } catch (SQLException e) {
      throw new IllegalStateException("the sales query failed: " + e.getMessage(), e);
    }
  }
  // ANCHOR_END: query

  // ANCHOR: latency
  // The database's latency, made on the database's side: the connection is
  // busy (and PostgreSQL's backend idle) for about query-ms, as when it waits
  // for the network or another service: a wait that uses no database CPU
  // (chapter 3's "Two sizing rules"). Real waits vary, and so does this one:
  // uniformly within query-ms x (1 +/- query-jitter). Identical waits would
  // make the connections march in lockstep (chapter 3 shows what that costs).
  private static void waitInDatabase(Connection connection, long millis, double jitter)
      throws SQLException {
    try (PreparedStatement sleep =
        connection.prepareStatement("SELECT pg_sleep(? / 1000.0 * (1 + ? * (2 * random() - 1)))")) {
      sleep.setLong(1, millis);
      sleep.setDouble(2, jitter);
      sleep.execute();
    }
  }
  // ANCHOR_END: latency

  private static final String CATEGORY_SALES =
      """
      SELECT p.category, count(*) AS orders, sum(o.quantity * p.price) AS revenue
      FROM orders o JOIN products p ON p.id = o.product_id
      WHERE o.region = ?
      GROUP BY p.category
      ORDER BY revenue DESC""";

  /**
   * What one request costs when nothing else runs: exactly what a request
   * does (a connection from the pool, the pg_sleep statement, the query) but
   * with a wait of 0, `runs` times one after another, after a few unmeasured
   * runs. Returns each run's wall-clock milliseconds. The lab driver reads
   * PostgreSQL's CPU time around this call: the CPU each request needs there,
   * which caps how many PostgreSQL can serve.
   */
  public double[] timeRequests(int runs) {
    for (int i = 0; i < CALIBRATION_WARMUP_RUNS; i++) {
      regionReport(1 + i % REGIONS, 0, 0);
    }
    double[] millis = new double[runs];
    for (int i = 0; i < runs; i++) {
      long start = System.nanoTime();
      regionReport(1 + i % REGIONS, 0, 0);
      millis[i] = (System.nanoTime() - start) / 1e6;
    }
    return millis;
  }

  private static List<CategorySales> categories(Connection connection, int region)
      throws SQLException {
    List<CategorySales> rows = new ArrayList<>();
    try (PreparedStatement query = connection.prepareStatement(CATEGORY_SALES)) {
      query.setInt(1, region);
      try (ResultSet result = query.executeQuery()) {
        while (result.next()) {
          rows.add(
              new CategorySales(
                  result.getString("category"),
                  result.getLong("orders"),
                  result.getBigDecimal("revenue").doubleValue()));
        }
      }
    }
    return rows;
  }
}
