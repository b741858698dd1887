package work;

/**
 * A JDBC endpoint cannot have a connection: the server has no database, or none of
 * the pool's connections came free in time. ErrorHandler answers 503 with the message,
 * which ab counts as a non-2xx response.
 */
public final class DatabaseUnavailable extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public static final String NOT_CONFIGURED =
      "no database: this server was started without one (db.default.url is not set; it comes from"
          + " JDBC_DATABASE_URL). Run the lab with scripts/lab run 06, or start the server under"
          + " scripts/with-postgres.";

  public DatabaseUnavailable(String message, Throwable cause) {
    super(message, cause);
  }

  public static DatabaseUnavailable notConfigured() {
    return new DatabaseUnavailable(NOT_CONFIGURED, null);
  }
}
