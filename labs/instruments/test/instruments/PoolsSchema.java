package instruments;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SpecVersionDetector;
import com.networknt.schema.ValidationMessage;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.Set;
import java.util.stream.Collectors;
import play.libs.Json;

/**
 * The lab driver's contract for GET /pools: the JSON Schema every lab shares,
 * labs/instruments/pools.schema.json, read from the repository (the driver
 * reads the same file).
 */
public final class PoolsSchema {
  private PoolsSchema() {}

  /** Relative to the lab's directory, where sbt runs its tests. */
  public static final File FILE = new File("../instruments/pools.schema.json");

  /**
   * Fails unless `report` (a /pools answer) matches the schema. Skips the
   * calling test instead, with a message, when the schema is not there (the
   * tests run from a directory other than a lab's, beside labs/instruments).
   */
  public static void assertMatches(JsonNode report) {
    assumeTrue(
        FILE.toPath().toAbsolutePath().normalize() + " is absent (this lab is not inside the repository?): "
            + "/pools is not checked against the driver's schema",
        FILE.isFile());
    JsonNode schemaJson;
    try {
      schemaJson = Json.parse(Files.readString(FILE.toPath()));
    } catch (IOException e) {
      throw new UncheckedIOException(FILE.toString(), e);
    }
    JsonSchema schema =
        JsonSchemaFactory.getInstance(SpecVersionDetector.detect(schemaJson)).getSchema(schemaJson);
    Set<ValidationMessage> errors = schema.validate(report);
    assertTrue(
        "/pools does not match " + FILE + ":\n  "
            + errors.stream().map(ValidationMessage::getMessage).sorted().collect(Collectors.joining("\n  "))
            + "\n/pools answered: " + report,
        errors.isEmpty());
    // A validator that ignored the schema would accept anything: it must refuse a report
    // without a key the driver needs.
    ObjectNode without = report.deepCopy();
    without.remove("available_processors");
    assertFalse(
        FILE + " accepted a /pools report without available_processors", schema.validate(without).isEmpty());
  }
}
