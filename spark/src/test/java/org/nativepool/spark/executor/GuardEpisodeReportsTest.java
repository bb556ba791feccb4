package org.nativepool.spark.executor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.nativepool.spark.config.LedgerSettings;
import org.nativepool.spark.events.GuardEpisodeEvent;
import org.nativepool.spark.jni.GuardEpisode;
import org.nativepool.spark.jni.Natives;
import org.nativepool.spark.ledger.ExecutorLedger;
import org.nativepool.spark.ledger.LedgerReader;

/**
 * {@link GuardEpisodeReports} on lists of episodes as {@code guardEpisodes0} returns them, over
 * this JVM's real executor memory ledger (no Spark): one WARN line and one event per episode,
 * however the polls fall; the ledger parts that grew during an episode.
 */
class GuardEpisodeReportsTest {
  private static final long MIB = 1L << 20;

  private final List<String> lines = new ArrayList<>();
  private final List<GuardEpisodeEvent> events = new ArrayList<>();
  private ExecutorLedger ledger;
  private GuardEpisodeReports reports;

  @BeforeAll
  static void load() {
    Natives.ensureLoaded();
  }

  @BeforeEach
  void start() {
    ledger =
        new ExecutorLedger(
            "4", LedgerSettings.defaults(), new LedgerReader(), null, m -> {}, n -> List.of());
    reports = new GuardEpisodeReports("4", ledger, lines::add, events::add);
  }

  /** An episode as the guard lists it: closed when {@code end} > 0. */
  private static GuardEpisode episode(long id, long start, long end, boolean nothingLeft) {
    return new GuardEpisode(
        id,
        start,
        end,
        2048 * MIB,
        32 * MIB,
        2000 * MIB,
        2030 * MIB,
        1500 * MIB,
        1560 * MIB,
        64 * MIB,
        3_200,
        end > 0 ? (end - start) * 1000 : 400_000,
        0,
        1,
        nothingLeft,
        0,
        0,
        -1,
        List.of(new GuardEpisode.Spill("sort (task 9)", 64 * MIB)));
  }

  @Test
  void anEpisodeIsReportedOnceWhenItEndsAndNotAgainWhileTheGuardStillListsIt() {
    long t = System.currentTimeMillis();
    reports.poll(List.of(episode(1, t, 0, false)));
    assertEquals(List.of(), lines, "nothing while it lasts, with native memory left to give");
    assertEquals(List.of(), events);
    GuardEpisode ended = episode(1, t, t + 300, false);
    reports.poll(List.of(ended));
    reports.poll(List.of(ended));
    reports.poll(List.of(ended, episode(2, t + 1000, 0, false)));
    assertEquals(1, lines.size(), lines::toString);
    String line = lines.get(0);
    assertTrue(line.startsWith("nativepool: executor 4: pod guard episode 1: "), line);
    assertTrue(line.contains("reserve of the 2,048.0 MiB limit"), line);
    assertTrue(line.contains("grew outside native memory: 60.0 MiB"), line);
    assertTrue(line.contains("spilled 64.0 MiB (sort (task 9) 64.0 MiB); reaction 3.2 ms"), line);
    assertTrue(line.contains("recovered in 300.0 ms"), line);
    assertEquals(1, events.size());
    GuardEpisodeEvent e = events.get(0);
    assertEquals("4", e.getExecutorId());
    assertEquals(1, e.getEpisodeId());
    assertEquals(t + 300, e.getEndMillis());
    assertEquals(Map.of("sort (task 9)", 64 * MIB), e.getSpills());
  }

  @Test
  void severalEpisodesEndingWithinOnePollAreEachReportedInOrder() {
    long t = System.currentTimeMillis();
    reports.poll(List.of());
    reports.poll(
        List.of(
            episode(1, t, t + 10, false),
            episode(2, t + 20, t + 30, false),
            episode(3, t + 40, t + 50, false)));
    assertEquals(3, lines.size(), lines::toString);
    for (int i = 0; i < 3; i++) {
      assertTrue(lines.get(i).contains("pod guard episode " + (i + 1) + ":"), lines::toString);
      assertEquals(i + 1, events.get(i).getEpisodeId());
    }
  }

  /**
   * Nothing native left to give while the episode lasts: the kernel may kill the executor before it
   * ends, so the line is logged at once; the event follows when it ends, with no second line.
   */
  @Test
  void nothingLeftIsLoggedAtOnceAndTheEventFollowsAtTheEnd() {
    long t = System.currentTimeMillis();
    reports.poll(List.of(episode(5, t, 0, true)));
    assertEquals(1, lines.size());
    assertTrue(
        lines.get(0).endsWith("nothing native is left to give: the kernel decides"),
        lines::toString);
    assertTrue(lines.get(0).contains("still short after 400.0 ms"), lines::toString);
    assertEquals(List.of(), events);
    reports.poll(List.of(episode(5, t, 0, true)));
    reports.poll(List.of(episode(5, t, t + 900, true)));
    assertEquals(1, lines.size(), lines::toString);
    assertEquals(1, events.size());
    assertTrue(events.get(0).isNothingLeft());
    assertEquals(t + 900, events.get(0).getEndMillis());
  }

  /** A replaced guard numbers its episodes from 1 again: its episode 1 is a new one. */
  @Test
  void aReplacedGuardsEpisodesAreNewEpisodes() {
    long t = System.currentTimeMillis();
    reports.poll(List.of(episode(1, t, t + 5, false)));
    reports.poll(List.of(episode(1, t + 2000, t + 2100, false)));
    assertEquals(2, events.size());
    assertEquals(t + 2000, events.get(1).getStartMillis());
  }

  @Test
  void anEpisodeThatDisappearsWhileItLastsIsReportedAsLastSeen() {
    long t = System.currentTimeMillis();
    reports.poll(List.of(episode(1, t, 0, false)));
    reports.poll(List.of()); // the guard was stopped
    assertEquals(1, lines.size());
    assertTrue(
        lines.get(0).endsWith("; the guard was stopped or replaced before it ended"),
        lines::toString);
    assertEquals(1, events.size());
    assertTrue(events.get(0).isOpen());
  }

  /**
   * While an episode lasts, each poll reads the ledger; the parts that grew from the reading before
   * the episode to their peak during it are named. Here 48 MiB of direct buffers appear after the
   * episode started.
   */
  @Test
  void theLedgerPartsThatGrewDuringTheEpisodeAreNamed() throws Exception {
    ledger.readNow(); // the calm reading before
    Thread.sleep(5);
    long t = System.currentTimeMillis();
    Thread.sleep(5);
    ByteBuffer burst = ByteBuffer.allocateDirect((int) (48 * MIB));
    reports.poll(List.of(episode(1, t, 0, false))); // reads the ledger: the burst is there
    int readings = ledger.history().size();
    reports.poll(List.of(episode(1, t, System.currentTimeMillis(), false)));
    assertEquals(readings, ledger.history().size(), "no reading once no episode lasts");
    Reference.reachabilityFence(burst); // held until the readings are over
    GuardEpisodeEvent e = events.get(0);
    Long direct = e.getGrownParts().get(LedgerReader.JVM_DIRECT);
    assertTrue(direct != null && direct >= 48 * MIB, e.getGrownParts()::toString);
    assertTrue(lines.get(0).contains("(ledger: "), lines::toString);
    assertTrue(lines.get(0).contains("jvm.direct +"), lines::toString);
    assertFalse(e.getGrownParts().containsKey(LedgerReader.RSS), "totals are not parts");
  }

  /**
   * Two episodes close together: the second's baseline is the last calm reading, before the first,
   * not the reading taken during the first, which already held the burst.
   */
  @Test
  void anEpisodeFollowingAnotherIsMeasuredFromTheLastCalmReading() throws Exception {
    ledger.readNow(); // calm
    Thread.sleep(5);
    long t1 = System.currentTimeMillis();
    Thread.sleep(5);
    ByteBuffer burst = ByteBuffer.allocateDirect((int) (48 * MIB));
    reports.poll(List.of(episode(1, t1, 0, false))); // a reading during episode 1
    Thread.sleep(5);
    long end1 = System.currentTimeMillis();
    Thread.sleep(5);
    long t2 = System.currentTimeMillis();
    Thread.sleep(5);
    reports.poll(List.of(episode(1, t1, end1, false), episode(2, t2, 0, false)));
    reports.poll(
        List.of(episode(1, t1, end1, false), episode(2, t2, System.currentTimeMillis(), false)));
    Reference.reachabilityFence(burst);
    assertEquals(2, events.size());
    for (GuardEpisodeEvent e : events) {
      Long direct = e.getGrownParts().get(LedgerReader.JVM_DIRECT);
      assertTrue(
          direct != null && direct >= 48 * MIB,
          "episode " + e.getEpisodeId() + ": " + e.getGrownParts());
    }
  }

  @Test
  void aMomentIsCalmOutsideEveryEpisode() {
    List<GuardEpisode> eps = List.of(episode(1, 100, 200, false), episode(2, 300, 0, false));
    assertTrue(GuardEpisodeReports.calm(99, eps));
    assertFalse(GuardEpisodeReports.calm(100, eps));
    assertFalse(GuardEpisodeReports.calm(200, eps));
    assertTrue(GuardEpisodeReports.calm(250, eps));
    assertFalse(GuardEpisodeReports.calm(Long.MAX_VALUE, eps), "episode 2 lasts");
  }

  @Test
  void growthIsMeasuredFromTheBaselineAndOnlyFromOneMebibyte() {
    Map<String, Long> grown =
        GuardEpisodeReports.grown(
            Map.of("a", 10 * MIB, "b", 10 * MIB, "c", 10 * MIB),
            Map.of("a", 12 * MIB, "b", 10 * MIB + MIB / 2, "c", 40 * MIB, "d", 3 * MIB));
    assertEquals(List.of("c", "d", "a"), List.copyOf(grown.keySet()), "largest first");
    assertEquals(30 * MIB, grown.get("c"));
    assertEquals(3 * MIB, grown.get("d"), "a part absent before grew from 0");
    assertEquals(Map.of(), GuardEpisodeReports.grown(null, Map.of("a", 1L << 30)));
  }
}
