package org.nativepool.spark.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.internal.config.package$;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.HeapHolderSettings;
import org.nativepool.spark.events.HeapHoldersRequest;

/**
 * The Native Memory page's "who holds the heap" action behind Spark's own {@link SecurityManager}
 * (the driver's, with {@code spark.acls.enable} and {@code spark.modify.acls}): a user without
 * modify permission is refused, one with it is heard; the action's key turns it off; a JVM is
 * asked at most once per interval; an executor gets its request when it next polls, once.
 */
class HeapHolderRequestsTest {
  private static final Set<String> LIVE = Set.of("1", "2");

  private final List<SparkListenerEvent> posted = new ArrayList<>();

  private static SecurityManager acls() {
    SparkConf conf =
        new SparkConf(false)
            .set("spark.acls.enable", "true")
            .set("spark.modify.acls", "alice")
            .set("spark.ui.view.acls", "alice,bob");
    return new SecurityManager(conf, scala.Option.empty(), package$.MODULE$.AUTH_SECRET_FILE());
  }

  private HeapHolderRequests requests(boolean onDemand) {
    SecurityManager sm = acls();
    return new HeapHolderRequests(
        new HeapHolderSettings(true, 1000, onDemand, 60_000, 1, 3, 64 << 20),
        sm::checkModifyPermissions,
        LIVE::contains,
        null,
        posted::add);
  }

  @Test
  void aUserWithoutModifyPermissionIsRefused() {
    HeapHolderRequests r = requests(true);
    assertEquals(
        "refused: user bob has no modify permission (spark.acls.enable, spark.modify.acls)",
        r.request("1", "bob"));
    assertNull(r.poll("1"), "nothing reaches the executor");
    assertTrue(r.request("1", "alice").startsWith("requested: executor 1 analyses its heap"));
    HeapHoldersRequest got = r.poll("1");
    assertEquals("alice", got.user());
    assertEquals("on demand by alice", got.trigger());
  }

  @Test
  void theActionIsOffWithItsKey() {
    assertTrue(requests(false).request("1", "alice").startsWith("refused: the action is off"));
  }

  @Test
  void aJvmIsAskedAtMostOncePerIntervalAndAnExecutorCollectsItsRequestOnce() {
    HeapHolderRequests r = requests(true);
    assertTrue(r.request("2", "alice").startsWith("requested"));
    assertTrue(r.request("2", "alice").startsWith("refused: a request for executor 2 is still"));
    assertEquals("2", r.poll("2").executorId());
    assertNull(r.poll("2"), "collected once");
    assertTrue(r.request("2", "alice").startsWith("refused: one analysis of a JVM per 60 s"));
    assertEquals("refused: no live JVM 9", r.request("9", "alice"));
  }
}
