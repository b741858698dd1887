package controllers;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.Test;
import work.VirtualThreads;

/** The reflective access to Java 21's API: it works where it can, and explains itself where not. */
public class VirtualThreadsTest {
  @Test
  public void availableOnJava21AndLater() {
    assertEquals(LabServer.VIRTUAL_THREADS, VirtualThreads.available());
  }

  @Test
  public void theExecutorStartsAVirtualThreadPerTaskOrExplainsWhyNot() throws Exception {
    if (!LabServer.VIRTUAL_THREADS) {
      try {
        VirtualThreads.newPerTaskExecutor();
        fail("Java " + LabServer.JAVA + " gave a virtual-thread executor");
      } catch (VirtualThreads.Unavailable e) {
        assertTrue(e.getMessage(), e.getMessage().startsWith("virtual threads need Java 21 or later; this JVM is Java "
            + LabServer.JAVA + " ("));
      }
      return;
    }
    ExecutorService executor = VirtualThreads.newPerTaskExecutor();
    try {
      String first = executor.submit(() -> Thread.currentThread().toString()).get(10, TimeUnit.SECONDS);
      assertTrue(first, first.startsWith("VirtualThread["));
    } finally {
      executor.shutdown();
    }
  }
}
