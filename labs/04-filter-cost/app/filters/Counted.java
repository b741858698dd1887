package filters;

/**
 * A filter that counts the requests it sees. The lab driver reads the counts
 * after each measurement (GET /filters): proof that the requests it just sent
 * really went through the set-up it meant to measure.
 */
public interface Counted {
  long calls();
}
