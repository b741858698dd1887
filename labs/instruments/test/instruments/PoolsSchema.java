package instruments;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersionDetector;
import com.networknt.schema.ValidationMessage;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.stream.Collectors;
import play.libs.Json;

/**
 * The lab driver's contract for GET /pools: the JSON Schema every lab shares,
 * labs/instruments/pools.schema.json (the driver reads the same file), which
 * the build puts on the test classpath.
 */
public final class PoolsSchema {
  private PoolsSchema() {}

  /** On the test classpath: the build copies labs/instruments/pools.schema.json there (Instruments.scala). */
  public static final String RESOURCE = "/pools.schema.json";

  /** Fails unless `report` (a /pools answer) matches the schema. */
  public static void assertMatches(JsonNode report) {
    JsonNode schemaJson;
    try (InputStream in = PoolsSchema.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is not on the test classpath: the build copies it there "
            + "from labs/instruments (labs/sbt/build/Instruments.scala)");
      }
      schemaJson = Json.parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(RESOURCE, e);
    }
    JsonSchema schema =
        JsonSchemaFactory.getInstance(SpecVersionDetector.detect(schemaJson)).getSchema(schemaJson);
    Set<ValidationMessage> errors = schema.validate(report);
    assertTrue(
        "/pools does not match " + RESOURCE + ":\n  "
            + errors.stream().map(ValidationMessage::getMessage).sorted().collect(Collectors.joining("\n  "))
            + "\n/pools answered: " + report,
        errors.isEmpty());
    // A validator that ignored the schema would accept anything: it must refuse a report
    // without a key the driver needs.
    ObjectNode without = report.deepCopy();
    without.remove("available_processors");
    assertFalse(
        RESOURCE + " accepted a /pools report without available_processors", schema.validate(without).isEmpty());
  }
}
