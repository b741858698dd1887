package instruments;

import java.util.Map;

/**
 * What a lab tells its instruments: which of its pools they read. A lab's own Diagnostics
 * implements it, and its conf/application.conf names that class (`instruments.pools`), so the
 * module names no lab.
 */
public interface LabPools {
  /** The answer to GET /pools, as JSON text: what the driver predicts from (pools.schema.json). */
  String poolsJson();

  /** The timeline's gauges, in the order the timeline's columns take (PoolTimeline.dispatchers, ...). */
  Map<String, PoolTimeline.Gauge> gauges();
}
