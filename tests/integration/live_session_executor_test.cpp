// A live session on the server's frame executor (server/frame_executor.h): its frames, its
// decode and its forwarding run on the executor's threads, bunched frames keep their own
// deadlines, a backlog is dropped to a keyframe, a cut holds the previous output, and the
// encoder sheds speed under an injected CPU hog and takes it back. Judged against the
// leakcheck clip's ground truth (live_session_rig.h), never by veil's detector.
#include "live_session_rig.h"

namespace veil {
namespace {

// The server's frame executor (server/frame_executor.h) runs the session's frames instead of a
// thread of its own: one pool thread carries it at full rate, every face covered (ground truth),
// and the session leaves the executor when it ends.
void RunOnTheExecutor(bool decode_on_executor) {
  const Source src = LoadSource(240);
  ASSERT_EQ(src.packets.size(), 240u);
  const test::GroundTruthClip& clip = Truth();
  ASSERT_TRUE(clip.ok()) << "the leakcheck clip is missing: run scripts/make-test-media.sh";
  std::shared_ptr<FrameExecutor> executor = StartExecutor(1);
  ASSERT_TRUE(executor);
  LiveSessionStats st;
  {
    LiveSessionConfig cfg;
    cfg.decode_on_executor = decode_on_executor;
    Rig rig("pooled", cfg, executor);
    ASSERT_TRUE(rig.ok());
    Viewer viewer;
    ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());
    Publish(*rig.tx, src, 0, 120);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    st = rig.session->stats();
    EXPECT_EQ(executor->stats().clients, 1u);
    auto [faces, visible] = CountFacesVisible(clip, viewer, 0, 120);
    std::printf("on the executor: in %llu, out %llu, stale %llu, executor runs %llu; %d of %d faces visible\n",
                (unsigned long long)st.frames_in, (unsigned long long)st.frames_out,
                (unsigned long long)st.stale_drops, (unsigned long long)executor->stats().runs, visible, faces);
    EXPECT_GT(faces, 80);
    EXPECT_EQ(visible, 0);
  }
  EXPECT_GE(executor->stats().runs, st.frames_out) << "the session's frames ran elsewhere";
  EXPECT_GE(st.frames_in, 115u);
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_GE(st.frames_out, 108u) << "one pool thread must carry one session at full rate";
#endif
  EXPECT_EQ(executor->stats().clients, 0u) << "the ended session is still on the executor";
}

TEST(LiveSession, RunsOnTheServersFrameExecutor) { RunOnTheExecutor(false); }

// server.decode_on_executor: the same session with its decode on the executor too.
TEST(LiveSession, RunsOnTheServersFrameExecutorWithItsDecode) { RunOnTheExecutor(true); }

// Frames handed over in a bunch (a WebRTC publisher's, held behind a lost packet until its
// retransmission came) each keep the deadline of their own spacing (burst_allowance_ms): none
// is dropped as stale for arriving with the others, and no face shows (ground truth). After 15
// paced frames, bunches of 3 frames every 3 frame intervals; the worker's frame made 12 ms
// dearer (InjectWorkerCpuMs), so the 3rd of a bunch waits over 33 ms for the 2 before it:
// strictly due at its hand-over + 33 ms (allowance 0), it goes stale (42-49 of 120 on the
// 2-vCPU EPYC, alone or beside a busy core). 20 ms made a bunch's work nearly the whole of its
// 100 ms, so a test running beside it on CI's 2 cores made paced frames stale too (12-23 where
// 10 are allowed; 3-5 at 12 ms). Every frame sent must
// arrive: the RTP ingest's jitter buffer once dropped about 25 of the 120 bunched frames
// silently (drop-on-latency, rtp_test BunchedFramesWhileTheConsumerIsBusyAreAllDelivered).
LiveSessionStats RunBunched(double allowance_ms, int* judged, int* visible) {
  const Source src = LoadSource(240);
  const test::GroundTruthClip& clip = Truth();
  auto ex = FrameExecutor::Start(1);
  EXPECT_TRUE(ex.ok() && src.packets.size() == 240u && clip.ok());
  if (!ex.ok() || src.packets.size() != 240u || !clip.ok()) return {};
  LiveSessionConfig cfg;
  cfg.decode_on_executor = true;
  cfg.burst_allowance_ms = allowance_ms;
  cfg.speed.enabled = false;  // the encoder at one speed: what is measured is the deadlines
  Rig rig("bunched", cfg, *ex);
  EXPECT_TRUE(rig.ok());
  if (!rig.ok()) return {};
  rig.session->InjectWorkerCpuMs(12);
  Viewer viewer;
  EXPECT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());
  const double t0 = NowMs();
  for (int i = 0; i < 120; ++i) {
    const double due = t0 + (i < 15 ? i : i / 3 * 3) * 1000.0 / 30;  // the first 15 paced
    while (NowMs() < due) std::this_thread::sleep_for(std::chrono::microseconds(500));
    EXPECT_TRUE(rig.tx->Send(src.packets[i], uint32_t(i * 3000)).ok());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  const LiveSessionStats st = rig.session->stats();
  EXPECT_EQ(rig.session->error(), "");
  std::printf("allowance %.0f ms: %llu frames received in %llu RTP packets, %llu lost\n", allowance_ms,
              (unsigned long long)st.rtp.frames, (unsigned long long)st.rtp.packets, (unsigned long long)st.rtp.lost);
  std::tie(*judged, *visible) = CountFacesVisible(clip, viewer, 0, 120);
  return st;
}

TEST(LiveSession, FramesHandedOverInABunchKeepTheirOwnSpacingsDeadline) {
  int judged0 = 0, visible0 = 0, judged = 0, visible = 0;
  const LiveSessionStats paced = RunBunched(100, &judged, &visible);
  const LiveSessionStats strict = RunBunched(0, &judged0, &visible0);
  std::printf("bunches of 3: allowance 0: in %llu, out %llu, stale %llu, %d of %d faces visible; "
              "allowance 100 ms: in %llu, out %llu, stale %llu, %d of %d faces visible\n",
              (unsigned long long)strict.frames_in, (unsigned long long)strict.frames_out,
              (unsigned long long)strict.stale_drops, visible0, judged0, (unsigned long long)paced.frames_in,
              (unsigned long long)paced.frames_out, (unsigned long long)paced.stale_drops, visible, judged);
  EXPECT_EQ(visible0, 0);
  EXPECT_EQ(visible, 0);
  EXPECT_GT(judged, 10);
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_GT(judged, 60);
  EXPECT_GE(paced.frames_in, 114u) << "bunched frames were lost in the ingest";
  EXPECT_GE(strict.frames_in, 114u) << "bunched frames were lost in the ingest";
  // The control: strictly, the later frames of each bunch go stale (the check can fail).
  EXPECT_GE(strict.stale_drops, 15u) << "the bunches did not make the strict deadlines miss";
  EXPECT_LE(paced.stale_drops, 10u) << "frames of a bunch dropped as stale";
  EXPECT_GE(paced.frames_out + 10, paced.frames_in);
#endif
}

// A client that takes the executor's one thread until released, as other sessions' work would.
struct Blocker : FrameExecutor::Client {
  std::atomic<bool> running{false}, release{false};
  std::optional<double> RunOne() override {
    running = true;
    for (int i = 0; i < 2000 && !release; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return std::nullopt;
  }
};

// With the decode on the executor, an executor taken for 3 s: nothing is decoded meanwhile (the
// decode waits for the executor, it does not run on the ingest thread), the compressed frames
// waiting are bounded (dropped past 2 s, counted as stale) and decoding resumes at the
// publisher's next keyframe: the session lives on, at full rate, no face visible (ground truth).
TEST(LiveSession, DecodeOnTheExecutorDropsABacklogAndResumesAtAKeyframe) {
  const Source src = LoadSource(240);
  ASSERT_EQ(src.packets.size(), 240u);
  const test::GroundTruthClip& clip = Truth();
  ASSERT_TRUE(clip.ok()) << "the leakcheck clip is missing: run scripts/make-test-media.sh";
  std::shared_ptr<FrameExecutor> executor = StartExecutor(1);
  ASSERT_TRUE(executor);
  Blocker blocker;
  {
    LiveSessionConfig cfg;
    cfg.decode_on_executor = true;
    Rig rig("backlog", cfg, executor);
    ASSERT_TRUE(rig.ok());
    Viewer viewer;
    ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());
    Publish(*rig.tx, src, 0, 30);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const LiveSessionStats before = rig.session->stats();
    EXPECT_GE(before.frames_in, 28u);
    executor->Ready(&blocker, 0);
    for (int i = 0; i < 400 && !blocker.running; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(blocker.running);
    Publish(*rig.tx, src, 30, 120);  // 3 s: 60 frames wait, then the backlog is dropped
    const LiveSessionStats blocked = rig.session->stats();
    blocker.release = true;
    Publish(*rig.tx, src, 120, 240);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    const LiveSessionStats after = rig.session->stats();
    auto [faces, visible] = CountFacesVisible(clip, viewer, 120, 240);
    int resumed = 0;
    {
      std::lock_guard lk(viewer.mu);
      for (const auto& [ts, f] : viewer.frames) resumed += int(ts / 3000) >= 120;
    }
    std::printf("backlog: in %llu -> %llu while taken -> %llu; stale %llu; out %llu; %d frames from 120 received, "
                "%d of %d faces visible; viewer decode errors %d\n",
                (unsigned long long)before.frames_in, (unsigned long long)blocked.frames_in,
                (unsigned long long)after.frames_in, (unsigned long long)after.stale_drops,
                (unsigned long long)after.frames_out, resumed, visible, faces, viewer.decode_errors);
    EXPECT_EQ(blocked.frames_in, before.frames_in) << "frames were decoded while the executor was taken";
    EXPECT_GE(after.stale_drops, 60u) << "the backlog was not dropped";
    EXPECT_LE(after.stale_drops, 100u);  // 90 arrived while it was taken; a few may leave stale around it
    EXPECT_EQ(rig.session->error(), "");
#if !defined(VEIL_SANITIZED_BUILD)
    EXPECT_GE(resumed, 108) << "decoding did not resume at the keyframe at full rate";
#endif
    EXPECT_GT(faces, 60);
    EXPECT_EQ(visible, 0);
    EXPECT_EQ(viewer.decode_errors, 0);
  }
  blocker.release = true;
  executor->Remove(&blocker);
}

// Bypass on the executor, with the decode on it: a forwarded frame leaves on arrival, before
// its decode, so an executor taken by other sessions' work for 3 s delays no forwarded frame.
// The viewer receives the publisher's own bytes throughout and decodes every one; the decodes
// that waited are dropped past 2 s, and the session's decoder resumes at the next keyframe, as
// in the test above. Before forwarding on arrival nothing left while the executor was taken.
TEST(LiveSession, BypassForwardsOnArrivalWhileTheExecutorIsTaken) {
  const Source src = LoadSource(240);
  ASSERT_EQ(src.packets.size(), 240u);
  std::shared_ptr<FrameExecutor> executor = StartExecutor(1);
  ASSERT_TRUE(executor);
  Blocker blocker;
  {
    LiveSessionConfig cfg;
    cfg.decode_on_executor = true;
    cfg.privacy.mode = Mode::kBypass;
    Rig rig("fw-taken", cfg, executor);
    ASSERT_TRUE(rig.ok());
    Viewer viewer(true);
    ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());
    Publish(*rig.tx, src, 0, 30);  // forwarding starts at the keyframe, frame 0
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE(rig.session->stats().forwarding);
    const uint64_t decoded_before = rig.session->stats().frames_in;
    executor->Ready(&blocker, 0);
    for (int i = 0; i < 400 && !blocker.running; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ASSERT_TRUE(blocker.running);
    Publish(*rig.tx, src, 30, 120);  // 3 s with the executor taken
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const LiveSessionStats blocked = rig.session->stats();
    int while_taken = 0, identical = 0;
    {
      std::lock_guard lk(viewer.mu);
      for (const auto& [ts, bytes] : viewer.received) {
        const int i = int(ts / 3000);
        if (i < 30 || i >= 120) continue;
        ++while_taken;
        identical += bytes == src.packets[size_t(i)].data;
      }
    }
    blocker.release = true;
    Publish(*rig.tx, src, 120, 240);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const LiveSessionStats after = rig.session->stats();
    int received = 0, decoded = 0, errors = 0;
    {
      std::lock_guard lk(viewer.mu);
      received = int(viewer.received.size());
      decoded = int(viewer.frames.size());
      errors = viewer.decode_errors;
    }
    std::printf("forwarding with the executor taken: %d of 90 frames out while taken (%d identical), decoded "
                "%llu -> %llu meanwhile; after: in %llu, forwarded %llu, stale %llu, decodes given up %llu; "
                "viewer %d received, %d decoded, %d errors\n",
                while_taken, identical, (unsigned long long)decoded_before, (unsigned long long)blocked.frames_in,
                (unsigned long long)after.frames_in, (unsigned long long)after.frames_forwarded,
                (unsigned long long)after.stale_drops, (unsigned long long)after.decodes_given_up, received, decoded,
                errors);
    EXPECT_EQ(blocked.frames_in, decoded_before) << "frames were decoded while the executor was taken";
    // The 90 decodes that waited are given up (60 past 2 s, the rest until the keyframe at 120),
    // and counted so; none of those frames is a stale drop: the viewer had every one.
    EXPECT_GE(after.decodes_given_up, 60u);
    EXPECT_LE(after.decodes_given_up, 90u);
    EXPECT_EQ(after.stale_drops, 0u);
    EXPECT_EQ(identical, while_taken) << "a frame out while the executor was taken is not the publisher's";
#if !defined(VEIL_SANITIZED_BUILD)
    EXPECT_GE(while_taken, 85) << "forwarded frames waited for the executor";
    EXPECT_GE(received, 228);
#endif
    EXPECT_GT(while_taken, 45);
    EXPECT_EQ(errors, 0) << "the viewer's decoder saw a broken reference chain";
    EXPECT_EQ(decoded, received);
    EXPECT_TRUE(after.forwarding);
    EXPECT_EQ(rig.session->error(), "");
    EXPECT_EQ(viewer.rx->stats().lost, 0u);
  }
  blocker.release = true;
  executor->Remove(&blocker);
}

// privacy.cut_hold_frames: at the leakcheck clip's hard cut (frame 90) the frames that would
// have left as a whole-frame mosaic while the new shot's detection was on its way leave as the
// previous output instead. Judged by ground truth: no face visible anywhere, the held frames
// among them; the held frame at the cut is the old shot's picture, not the new one's.
TEST(LiveSession, AtACutHoldsThePreviousOutputInsteadOfAWholeFrameMosaic) {
  const Source src = LoadSource(120);
  ASSERT_EQ(src.packets.size(), 120u);
  const test::GroundTruthClip& clip = Truth();
  ASSERT_TRUE(clip.ok()) << "the leakcheck clip is missing: run scripts/make-test-media.sh";
  LiveSessionConfig cfg;
  cfg.privacy.cut_hold_frames = 3;
  Rig rig("hold", cfg);
  ASSERT_TRUE(rig.ok());
  Viewer viewer;
  ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());
  Publish(*rig.tx, src, 0, 120);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const LiveSessionStats st = rig.session->stats();
  auto [faces, visible] = CountFacesVisible(clip, viewer, 0, 120);
  // Around the cut: each received frame's mean abs luma difference from the received frame
  // before it and from its own master (the lossless picture the publisher sent).
  struct Near {
    int i;
    double from_previous, from_master;
  };
  std::vector<Near> near;
  {
    std::lock_guard lk(viewer.mu);
    for (int i = 86; i < 96; ++i) {
      auto a = viewer.frames.find(uint32_t((i - 1) * 3000)), b = viewer.frames.find(uint32_t(i * 3000));
      if (a == viewer.frames.end() || b == viewer.frames.end()) continue;
      const double px = double(b->second->width) * b->second->height;
      near.push_back({i, cv::norm(test::LumaOf(*a->second), test::LumaOf(*b->second), cv::NORM_L1) / px,
                      cv::norm(clip.master[size_t(i)], test::LumaOf(*b->second), cv::NORM_L1) / px});
    }
  }
  std::printf("hold at a cut: held %llu, fail-closed %lld, fast cuts %llu, scene cuts %lld; %d of %d faces visible; "
              "frame: change from the previous / from its master:",
              (unsigned long long)st.held_frames, (long long)st.privacy.fail_closed,
              (unsigned long long)st.fast_cut_frames,
              (long long)st.privacy.scene_cuts, visible, faces);
  for (const Near& n : near) std::printf(" %d: %.1f / %.1f", n.i, n.from_previous, n.from_master);
  std::printf("\n");
  EXPECT_GT(faces, 80);
  EXPECT_EQ(visible, 0) << "a held frame showed a face";
  EXPECT_GE(st.privacy.scene_cuts, 1);
  EXPECT_GE(st.held_frames, 1u) << "the cut's fail-closed frame was not held";
  EXPECT_GE(st.privacy.fail_closed, int64_t(st.held_frames) + 1)
      << "a held frame counts as fail-closed, and the first frame, with nothing to hold, is a mosaic";
  // The new shot's first picture after the held frame went to the encoder at its fastest speed
  // (encoder.fast_cuts), unless load shedding had the encoder there already.
  if (st.shed_steps_up == 0) {
    EXPECT_GE(st.fast_cut_frames, 1u) << "the cut was not encoded fast";
  }
  EXPECT_LE(st.fast_cut_frames, 3u) << "one hard cut in 120 frames";
  // A held frame at the cut repeats the old shot: next to no change from the frame before, far
  // from its own master (the new shot).
  bool held_at_cut = false;
  for (const Near& n : near)
    if (n.i >= 90 && n.from_previous < 1.5 && n.from_master > 3 * n.from_previous + 10) held_at_cut = true;
  EXPECT_TRUE(held_at_cut) << "no frame at the cut repeated the old shot";
}

// Load shedding (issue 12): with a CPU hog injected into the session's worker, the frames leave
// late and the session sheds levels in order: the encoder's speed steps first (libvpx cpu-used
// -8 .. -16), then one frame of detection cadence (3 -> 4, what the 200-ms privacy bound
// allows); it never gives up privacy (ground truth) or fails closed for it. When the hog stops
// it takes the levels back, one per calm second. This machine's own speed is kept out of it:
// the hog (45 ms of CPU a frame, over the 33-ms frame interval) makes frames go stale at every
// level on any machine, and the thresholds are wide (p90 latency over 1.5 frame intervals to
// shed, under 1.0 to be calm, 10% stale), so that a slower machine's own latency (a clean-clone
// run once shed a level before the hog) neither sheds before the hog nor holds a level after it.
TEST(LiveSession, ShedsEncoderSpeedThenCadenceUnderAnInjectedCpuHogAndTakesThemBack) {
  const Source src = LoadSource(240);
  ASSERT_EQ(src.packets.size(), 240u);
  const test::GroundTruthClip& clip = Truth();
  ASSERT_TRUE(clip.ok()) << "the leakcheck clip is missing: run scripts/make-test-media.sh";
  LiveSessionConfig cfg;
  cfg.speed.window_ms = 500;
  cfg.speed.calm_ms = 1000;
  cfg.speed.calm_max_ms = 8000;
  cfg.speed.high = 1.5;
  cfg.speed.low = 1.0;
  cfg.speed.stale_share = 0.1;
  cfg.speed.warmup_ms = 900;  // the start-up grace ends before the hog (the first judged window ends 1 s in)
  {  // server.shed_trim = false: no window level, the same frames
    LiveSessionConfig no_trim = cfg;
    no_trim.shed_trim = false;
    Rig other("shed-no-trim", no_trim);
    ASSERT_TRUE(other.ok());
    Publish(*other.tx, src, 0, 30);
    EXPECT_EQ(other.session->stats().max_shed_level, 5) << "4 encoder steps and one of cadence";
  }
  Rig rig("shed", cfg);
  ASSERT_TRUE(rig.ok());
  Viewer viewer;
  ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());

  Publish(*rig.tx, src, 0, 30);
  const LiveSessionStats before = rig.session->stats();
  EXPECT_EQ(before.shed_level, 0);
  EXPECT_EQ(before.encoder_speed, "cpu-used -8");
  EXPECT_EQ(before.detect_every, 3);
  EXPECT_FALSE(before.detect_trimmed);
  EXPECT_EQ(before.max_shed_level, 6)
      << "4 encoder steps (-10, -10 static 1000, -14 static 1000, -14 static 3000), the trimmed detection window, "
         "one of cadence";

  // The hog: every frame's work now starts 45 ms late. Levels are taken one per window, and
  // every one is visible in the stats on the way.
  rig.session->InjectWorkerCpuMs(45);
  std::vector<int> levels;
  std::vector<std::string> seen;  // what each level set, in the order it came
  std::thread watch([&] {
    for (int i = 0; i < 80; ++i) {
      const LiveSessionStats s = rig.session->stats();
      if (levels.empty() || levels.back() != s.shed_level) {
        levels.push_back(s.shed_level);
        seen.push_back(s.encoder_speed + (s.detect_trimmed ? " trimmed" : "") + " every " + std::to_string(s.detect_every));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  Publish(*rig.tx, src, 30, 150);
  watch.join();
  const LiveSessionStats hog = rig.session->stats();
  std::printf("under the hog: level %d of %d (%s, detect every %d), overloaded %d, stale %llu, levels seen",
              hog.shed_level, hog.max_shed_level, hog.encoder_speed.c_str(), hog.detect_every, int(hog.overloaded),
              (unsigned long long)hog.stale_drops);
  for (int l : levels) std::printf(" %d", l);
  std::printf("\n");
  EXPECT_EQ(hog.shed_level, 6);
  EXPECT_EQ(hog.encoder_speed, "cpu-used -14 static 3000");
  EXPECT_TRUE(hog.detect_trimmed);
  EXPECT_EQ(hog.detect_every, 4);
  EXPECT_TRUE(hog.overloaded) << "nothing left to shed and still late: the node's turn";
  for (size_t i = 1; i < levels.size(); ++i) {
    EXPECT_EQ(levels[i], levels[i - 1] + 1) << "one level at a time";
  }
  // The order: the encoder's steps, then the trimmed window, then cadence.
  const std::vector<std::string> order = {"cpu-used -8 every 3",
                                          "cpu-used -10 every 3",
                                          "cpu-used -10 static 1000 every 3",
                                          "cpu-used -14 static 1000 every 3",
                                          "cpu-used -14 static 3000 every 3",
                                          "cpu-used -14 static 3000 trimmed every 3",
                                          "cpu-used -14 static 3000 trimmed every 4"};
  ASSERT_FALSE(levels.empty());
  for (size_t i = 0; i < levels.size(); ++i) {
    EXPECT_EQ(seen[i], order.at(size_t(levels[i]))) << "level " << levels[i];
  }
  auto [faces, visible] = CountFacesVisible(clip, viewer, 30, 150);
  std::printf("ground truth under the hog: %d of %d faces visible\n", visible, faces);
  EXPECT_GT(faces, 50) << "about half the frames leave under the hog";
  EXPECT_LE(visible, faces / 50) << "shedding gave up privacy";

  // The hog stops: one level back per calm second (the publisher goes on, from a keyframe).
  rig.session->InjectWorkerCpuMs(0);
  const double t0 = NowMs();
  int next = 240;  // from the clip's start (a keyframe), timestamps going on
  LiveSessionStats after = rig.session->stats();
  while (NowMs() - t0 < 12000 && after.shed_level > 0) {
    ASSERT_TRUE(rig.tx->Send(src.packets[size_t(next % 240)], uint32_t(next * 3000)).ok());
    ++next;
    std::this_thread::sleep_for(std::chrono::milliseconds(33));
    after = rig.session->stats();
  }
  std::printf("hog gone: level %d after %.1f s, steps up %llu, down %llu\n", after.shed_level, (NowMs() - t0) / 1000,
              (unsigned long long)after.shed_steps_up, (unsigned long long)after.shed_steps_down);
  EXPECT_EQ(after.shed_level, 0);
  EXPECT_EQ(after.encoder_speed, "cpu-used -8");
  EXPECT_EQ(after.detect_every, 3);
  EXPECT_FALSE(after.detect_trimmed);
  // Every step up came back down. 6 when the load fell at once; on a slow machine the first calm
  // second can still be over budget, a seventh step up then comes back too (seen once in CI, with
  // 5 levels then: 6 / 6).
  EXPECT_EQ(after.shed_steps_down, after.shed_steps_up);
  EXPECT_GE(after.shed_steps_down, 6u);
  const std::string m = rig.metrics.ExportText();
  EXPECT_NE(m.find("veil_session_shed_level{session=\"shed\"}"), std::string::npos);
}

}  // namespace
}  // namespace veil
