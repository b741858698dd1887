package instruments;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.Test;
import play.libs.Json;

/**
 * /pools reports the -D options the server started with (for a load machine to compare
 * with the set-up it means to measure), but never a secret's value: a key that mentions
 * a secret, a password ("pass"), a key, a token or a credential, in any case, is left out.
 * Both reports say the same: PoolReport (Scala, most labs) and javadsl.PoolReport (Java, lab 02).
 */
public class PoolReportPropertiesTest {
  private static final List<String> ARGUMENTS = List.of(
      "-Xmx1g",
      "-Dlab.work-ms=100",
      "-Dhttp.address=192.0.2.10",
      "-Dplay.http.secret.key=hidden-1",
      "-Ddb.default.password=hidden-2",
      "-Ddb.default.pass=hidden-3",
      "-Dapi.token=hidden-4",
      "-Dcloud.Credentials.file=hidden-5",
      "-DSIGNING_KEY=hidden-6",
      "-Dmy.PassPhrase=hidden-7",
      "-Dempty.TOKEN=");

  @Test
  public void propertiesLeaveEverySecretOut() {
    for (JsonNode shown : List.of(Json.parse(PoolReport.properties(ARGUMENTS).toString()),
        Json.parse(instruments.javadsl.PoolReport.properties(ARGUMENTS).toString()))) {
      Set<String> keys = new TreeSet<>();
      shown.fieldNames().forEachRemaining(keys::add);
      assertEquals(Set.of("http.address", "lab.work-ms"), keys);
      assertEquals("100", shown.get("lab.work-ms").asText());
      assertFalse(shown.toString(), shown.toString().contains("hidden"));
    }
  }

  @Test
  public void secretKeysAreRecognisedInAnyCase() {
    for (String key : List.of("play.http.secret.key", "db.default.pass", "DB_PASSWORD", "api.Token",
        "aws.credential", "ssl.keyStore.path")) {
      assertTrue(key, PoolReport.isSecret(key));
      assertTrue(key, instruments.javadsl.PoolReport.isSecret(key));
    }
    for (String key : List.of("lab.work-ms", "http.port", "pul.lab",
        "java.util.concurrent.ForkJoinPool.common.parallelism")) {
      assertFalse(key, PoolReport.isSecret(key));
      assertFalse(key, instruments.javadsl.PoolReport.isSecret(key));
    }
  }
}
