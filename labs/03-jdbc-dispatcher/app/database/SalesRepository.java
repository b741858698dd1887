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

  private final Database db;
  private final long queryMillis;
  private final AtomicLong connectionTimeouts = new AtomicLong();

  @Inject
  public SalesRepository(Database db, Config config) {
    this.db = db;
    this.queryMillis = config.getLong("lab.query-ms");
  }

  public long queryMillis() {
    return queryMillis;
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

  // ANCHOR: query
  // Blocks the calling thread twice over: first until HikariCP hands it a
  // connection, then for the whole round trip to PostgreSQL.
  public RegionReport regionReport(int region) {
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
      waitInDatabase(connection);
      return new RegionReport(
          region, Thread.currentThread().getName(), queryMillis, categories(connection, region));
    } catch (SQLException e) {
      throw new IllegalStateException("the sales query failed: " + e.getMessage(), e);
    }
  }
  // ANCHOR_END: query

  // ANCHOR: latency
  // The database's latency, made on the database's side: the connection is
  // busy (and PostgreSQL's backend idle) for query-ms, as when it waits for a disk.
  private void waitInDatabase(Connection connection) throws SQLException {
    if (queryMillis <= 0) {
      return;
    }
    try (PreparedStatement sleep = connection.prepareStatement("SELECT pg_sleep(?)")) {
      sleep.setDouble(1, queryMillis / 1000.0);
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
   * What the query itself costs PostgreSQL, without the pg_sleep: the median
   * executor time of EXPLAIN ANALYZE over a few runs. The lab driver's
   * prediction uses it for the time a connection is busy and for how many
   * queries a second PostgreSQL's CPU can execute.
   */
  public double measureQueryWorkMillis(int runs) {
    return db.withConnection(
        connection -> {
          double[] millis = new double[runs];
          try (PreparedStatement explain =
              connection.prepareStatement(
                  "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + CATEGORY_SALES)) {
            for (int i = 0; i < runs; i++) {
              explain.setInt(1, 1 + i % REGIONS);
              try (ResultSet result = explain.executeQuery()) {
                result.next();
                com.fasterxml.jackson.databind.JsonNode plan =
                    play.libs.Json.parse(result.getString(1)).get(0);
                millis[i] = plan.get("Execution Time").asDouble();
              }
            }
          }
          java.util.Arrays.sort(millis);
          return millis[runs / 2];
        });
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
