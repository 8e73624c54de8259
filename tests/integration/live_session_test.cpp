// A live session on loopback: a paced RTP publisher -> LiveSession (real
// YuNet through the shared scheduler) -> an RTP viewer; the received frames
// are decoded and judged against the ground truth of the leakcheck clip
// (annotated faces at known positions), never by veil's detector.
#include "live_session_rig.h"

namespace veil {
namespace {

TEST(LiveSession, PixelatesFacesAtFullRateAndSwitchesModes) {
  const Source src = LoadSource(240);
  ASSERT_EQ(src.packets.size(), 240u);
  const test::GroundTruthClip& clip = Truth();
  ASSERT_TRUE(clip.ok()) << "the leakcheck clip is missing: run scripts/make-test-media.sh";
  Rig rig("s1");
  ASSERT_TRUE(rig.ok());
  Viewer viewer;
  ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());

  Publish(*rig.tx, src, 0, 150);  // anonymize
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(rig.session->SetMode(Mode::kBypass).ok());
  Publish(*rig.tx, src, 150, 195);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(rig.session->SetMode(Mode::kFullBlur).ok());
  Publish(*rig.tx, src, 195, 240);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  const LiveSessionStats st = rig.session->stats();
  size_t received = 0;
  {
    std::lock_guard lk(viewer.mu);
    received = viewer.frames.size();
  }
  std::printf("live session: in %llu, out %llu, stale %llu, fail-closed %lld, viewer received %zu/240\n",
              (unsigned long long)st.frames_in, (unsigned long long)st.frames_out,
              (unsigned long long)st.stale_drops, (long long)st.privacy.fail_closed, received);
  EXPECT_GE(st.frames_in, 230u);
#if !defined(VEIL_SANITIZED_BUILD)
  // Full rate holds on an optimized build; a sanitized one (2-10x slower)
  // degrades by stale drops, as designed, and is only checked for privacy.
  EXPECT_GE(received, 216u) << "received rate more than 10% below the sent rate";
#endif

  auto [faces_a, kept_a] = CountFacesVisible(clip, viewer, 0, 150);
  auto [faces_b, kept_b] = CountFacesVisible(clip, viewer, 165, 195);
  auto [faces_f, kept_f] = CountFacesVisible(clip, viewer, 210, 240);
  std::printf("ground truth: anonymize %d of %d faces visible, bypass %d of %d, full_blur %d of %d\n", kept_a,
              faces_a, kept_b, faces_b, kept_f, faces_f);
  EXPECT_GT(faces_a, 100);
  // The engine's bound (the detection cadence, as the other live tests allow: <= 2% of faces).
  EXPECT_LE(kept_a, faces_a / 50) << "faces left visible in anonymize mode";
  EXPECT_GE(kept_b, faces_b * 9 / 10) << "bypass should leave faces untouched (the judge must see them)";
  EXPECT_GT(faces_f, 20);
  EXPECT_EQ(kept_f, 0) << "full_blur left a face visible";
  const std::string m = rig.metrics.ExportText();
  EXPECT_NE(m.find("veil_session_processing_seconds_bucket{session=\"s1\""), std::string::npos);
  EXPECT_NE(m.find("veil_ai_batch_size_bucket{target=\"local\""), std::string::npos);
}

TEST(LiveSession, StalledDetectionFailsClosedNeverLeaks) {
  const Source src = LoadSource(90);
  const test::GroundTruthClip& clip = Truth();
  ASSERT_TRUE(clip.ok()) << "the leakcheck clip is missing: run scripts/make-test-media.sh";
  MetricsRegistry metrics;
  // A detector that answers once, then hangs: the AI path is dead mid-stream.
  struct Hanging : Detector {
    std::unique_ptr<Detector> real = std::move(*LoadDetector({}));
    std::atomic<int> calls{0};
    std::string name() const override { return "hanging"; }
    bool native_batch() const override { return false; }
    Result<std::vector<Detections>> Detect(const std::vector<cv::Mat>& im, float s) override {
      if (++calls > 3) std::this_thread::sleep_for(std::chrono::seconds(2));
      return real->Detect(im, s);
    }
  };
  auto sched = InferenceScheduler::Create(
      {}, []() -> Result<std::unique_ptr<Detector>> { return std::unique_ptr<Detector>(new Hanging()); }, &metrics,
      "local");
  ASSERT_TRUE(sched.ok());
  auto session = LiveSession::Start("s2", {}, sched->get(), 2, &metrics);
  ASSERT_TRUE(session.ok());
  Viewer viewer;
  ASSERT_TRUE((*session)->AddViewer("127.0.0.1", viewer.rx->port()).ok());
  auto tx = RtpSender::Start({});
  ASSERT_TRUE((*tx)->AddViewer("127.0.0.1", (*session)->ingest_port()).ok());
  Publish(**tx, src, 0, 90);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const LiveSessionStats st = (*session)->stats();
  EXPECT_GT(st.privacy.fail_closed, 40) << "frames after the stall must be whole-frame mosaics";
  auto [faces, kept] = CountFacesVisible(clip, viewer, 0, 90);
  std::printf("stalled detector: %d of %d faces visible, fail-closed %lld\n", kept, faces, (long long)st.privacy.fail_closed);
  EXPECT_GT(faces, 100);
  EXPECT_EQ(kept, 0) << "a face left visible while the AI path was stalled";
  (*sched)->Shutdown();
}

// The leakcheck clip's first `n` frames as a publisher sends them: frames [0, switch_at) at
// 1280x720, the rest scaled to 640x360 and sent by a new encoder (a publisher that changed
// resolution, starting the new size with a keyframe, as browsers and encoders do).
Source LoadResizingSource(int n, int switch_at) {
  Source s;
  auto r = MediaReader::Open(test::Media("leakcheck/input.ivf"));
  EXPECT_TRUE(r.ok());
  VideoInfo small = (*r)->info();
  small.width = 640;
  small.height = 360;
  auto big_enc = VideoEncoder::Open("vp8", (*r)->info(), {});
  auto small_enc = VideoEncoder::Open("vp8", small, {});
  EXPECT_TRUE(big_enc.ok() && small_enc.ok());
  while (int(s.frames.size()) < n) {
    ReadItem it = (*r)->Next();
    if (std::holds_alternative<EndOfStream>(it)) break;
    auto* f = std::get_if<FramePtr>(&it);
    if (!f) continue;
    const bool big = int(s.frames.size()) < switch_at;
    FramePtr copy = MakeFrame(big ? (*f)->width : 640, big ? (*f)->height : 360);
    if (big) {
      CopyFrame(**f, *copy);
    } else {
      for (auto [from, to] : {std::pair{&(*f)->y, &copy->y}, {&(*f)->u, &copy->u}, {&(*f)->v, &copy->v}}) {
        cv::Mat dst(to->height, to->width, CV_8UC1, to->data, size_t(to->stride));
        cv::resize(cv::Mat(from->height, from->width, CV_8UC1, from->data, size_t(from->stride)), dst, dst.size(), 0, 0,
                   cv::INTER_AREA);
      }
    }
    s.frames.push_back(copy);
    const size_t before = s.packets.size();
    EXPECT_TRUE((big ? *big_enc : *small_enc)->Encode(*copy, false, s.packets).ok());
    EXPECT_EQ(s.packets.size(), before + 1) << "one packet per frame (realtime, no lag)";
  }
  return s;
}

// Issue 13, reproduced: a publisher that changed resolution mid-stream ended its session with
// "encoder: frame size differs from the encoder's". Now the encoder re-opens at a keyframe, the
// viewer decodes the new size, and privacy holds across the change (judged against ground truth).
TEST(LiveSession, FollowsAResolutionChangeAtAKeyframe) {
  constexpr int kSwitch = 60, kFrames = 150;
  const Source src = LoadResizingSource(kFrames, kSwitch);
  ASSERT_EQ(src.packets.size(), size_t(kFrames));
  const test::GroundTruthClip& clip = Truth();
  ASSERT_TRUE(clip.ok()) << "the leakcheck clip is missing: run scripts/make-test-media.sh";
  Rig rig("r1");
  ASSERT_TRUE(rig.ok());
  Viewer viewer;
  ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());
  Publish(*rig.tx, src, 0, kFrames);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  EXPECT_EQ(rig.session->error(), "") << "the session must go on";
  const LiveSessionStats st = rig.session->stats();
  EXPECT_EQ(st.resolution_changes, 1u);
  EXPECT_EQ(st.width, 640);
  EXPECT_EQ(st.height, 360);
  int small_frames = 0, judged = 0, visible = 0, clear_judged = 0, clear_visible = 0, judged_src = 0, visible_src = 0;
  double max_ssim = 0;
  {
    std::lock_guard lk(viewer.mu);
    for (const auto& [ts, out] : viewer.frames) {
      const int i = int(ts / 3000);
      ASSERT_EQ(out->width, i < kSwitch ? 1280 : 640) << "frame " << i;
      small_frames += i >= kSwitch;
      const test::FaceVerdict v = test::JudgeFrame(clip, i, test::LumaOf(*out));
      judged += v.judged;
      visible += v.visible;
      clear_judged += v.clear_judged;
      clear_visible += v.clear_visible;
      max_ssim = std::max(max_ssim, v.max_ssim);
      // The same judge on what the publisher sent: the faces are there to be found (it can fail).
      const test::FaceVerdict vs = test::JudgeFrame(clip, i, test::LumaOf(*src.frames[size_t(i)]));
      judged_src += vs.judged;
      visible_src += vs.visible;
    }
  }
  std::printf("resolution change: %d frames after it received at 640x360; faces judged %d, visible %d (max SSIM %.3f), "
              "clear %d of %d; in the publisher's frames %d of %d visible; fail-closed %lld\n",
              small_frames, judged, visible, max_ssim, clear_visible, clear_judged, visible_src, judged_src,
              (long long)st.privacy.fail_closed);
#if !defined(VEIL_SANITIZED_BUILD)
  EXPECT_GE(small_frames, (kFrames - kSwitch) * 8 / 10) << "the viewer decodes the new size";
#else
  EXPECT_GT(small_frames, 0);
#endif
  EXPECT_GT(judged, 50);
  EXPECT_GT(clear_judged, 20);
  // veil's stated bounds (docs/privacy.md): no clear face, and few others. A turned head whose
  // detected box sits beside the annotated one can show its far side for a frame (frame 46 here,
  // a 43-px profile at the top edge, best half at SSIM 0.896-0.916 over runs), as on the eval's
  // photos: the all-face bound is 1% of the face-frames, the clear one none.
  EXPECT_EQ(clear_visible, 0) << "a clear annotated face left visible";
  EXPECT_LE(visible, judged / 100) << "more than 1% of the annotated faces left visible";
  EXPECT_GE(visible_src, judged_src * 9 / 10) << "the judge must see the faces the publisher sent";
}

// Bypass forwards the publisher's frames (issue 12 item 3): the viewer receives the publisher's
// own bytes, as one RTP stream, across switches to anonymize and back. The oracles are the
// publisher's encoded frames, the viewer's decoder, and the clip's ground truth. On the frame
// executor with the decode on it (the server's default), forwarded frames leave on arrival,
// before their decode (LiveSession::ForwardOnArrival); without, after it on the ingest thread.
void BypassAcrossModeSwitches(bool on_executor) {
  constexpr int kKeyEvery = 30, kJoin = 40, kAnon = 75, kBack = 135, kFrames = 210;
  const Source src = LoadSource(kFrames, kKeyEvery);
  ASSERT_EQ(src.packets.size(), size_t(kFrames));
  const test::GroundTruthClip& clip = Truth();
  ASSERT_TRUE(clip.ok()) << "the leakcheck clip is missing: run scripts/make-test-media.sh";
  LiveSessionConfig cfg;
  cfg.privacy.mode = Mode::kBypass;
  std::shared_ptr<FrameExecutor> executor;
  if (on_executor) {
    executor = StartExecutor(2);
    ASSERT_TRUE(executor);
    cfg.decode_on_executor = true;
  }
  Rig rig("fw", cfg, executor);
  ASSERT_TRUE(rig.ok());
  Viewer viewer(true), late(true);
  ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", viewer.rx->port()).ok());
  auto settle = [] { std::this_thread::sleep_for(std::chrono::milliseconds(250)); };

  Publish(*rig.tx, src, 0, kJoin);
  settle();
  // A viewer joins mid-GOP: it needs a keyframe now, which veil's encoder makes; forwarding
  // resumes at the publisher's next keyframe (frame 60).
  ASSERT_TRUE(rig.session->AddViewer("127.0.0.1", late.rx->port()).ok());
  Publish(*rig.tx, src, kJoin, kAnon);
  settle();
  EXPECT_TRUE(rig.session->stats().forwarding);
  ASSERT_TRUE(rig.session->SetMode(Mode::kAnonymize).ok());  // mid-GOP: the next frame must already be covered
  Publish(*rig.tx, src, kAnon, kBack);
  settle();
  ASSERT_TRUE(rig.session->SetMode(Mode::kBypass).ok());  // mid-GOP: re-encoded until the publisher's keyframe at 150
  Publish(*rig.tx, src, kBack, kFrames);
  settle();

  const LiveSessionStats st = rig.session->stats();
  EXPECT_EQ(rig.session->error(), "");
  int identical[4] = {0, 0, 0, 0}, received[4] = {0, 0, 0, 0};  // [0,40) [60,75) [75,150) [150,210)
  int judged = 0, visible = 0, judged_bypass = 0, visible_bypass = 0, first_late = -1;
  {
    std::lock_guard lk(viewer.mu);
    for (const auto& [ts, bytes] : viewer.received) {
      const int i = int(ts / 3000);
      const int part = i < kJoin ? 0 : i < 2 * kKeyEvery ? -1 : i < kAnon ? 1 : i < 150 ? 2 : 3;
      if (part < 0) continue;
      ++received[part];
      identical[part] += bytes == src.packets[size_t(i)].data;
    }
    for (const auto& [ts, out] : viewer.frames) {
      const int i = int(ts / 3000);
      const test::FaceVerdict v = test::JudgeFrame(clip, i, test::LumaOf(*out));
      if (i >= kAnon && i < kBack) {
        judged += v.judged;
        visible += v.visible;
      } else if (i < kAnon) {
        judged_bypass += v.judged;
        visible_bypass += v.visible;
      }
    }
    EXPECT_EQ(viewer.decode_errors, 0) << "the viewer's decoder saw a broken reference chain";
    EXPECT_EQ(viewer.frames.size(), viewer.received.size()) << "every frame received must decode";
  }
  {
    std::lock_guard lk(late.mu);
    EXPECT_EQ(late.decode_errors, 0);
    if (!late.frames.empty()) first_late = int(late.frames.begin()->first / 3000);
  }
  std::printf("bypass forwarding: forwarded %llu of %llu sent (encoded %llu); identical to the publisher's: "
              "[0,40) %d/%d, [60,75) %d/%d, anonymize %d/%d, [150,210) %d/%d; late viewer's first frame %d; "
              "anonymize faces judged %d, visible %d; bypass %d of %d visible\n",
              (unsigned long long)st.frames_forwarded, (unsigned long long)st.frames_out,
              (unsigned long long)st.stages.at("encode").count, identical[0], received[0], identical[1], received[1],
              identical[2], received[2], identical[3], received[3], first_late, judged, visible, visible_bypass,
              judged_bypass);
  // Forwarded: the publisher's bytes, unchanged.
  for (int p : {0, 1, 3}) EXPECT_EQ(identical[p], received[p]) << "part " << p;
#if !defined(VEIL_SANITIZED_BUILD)
  for (int p : {0, 1, 3}) EXPECT_GE(received[p], 9 * (p == 0 ? kJoin : p == 1 ? kAnon - 60 : 60) / 10) << "part " << p;
  EXPECT_GE(st.frames_forwarded, 100u);
  EXPECT_LE(st.stages.at("encode").count, 110u) << "bypass frames were re-encoded";
#endif
  EXPECT_EQ(identical[2], 0) << "anonymize must not forward";
  EXPECT_GT(received[2], 0);
  EXPECT_GE(first_late, kJoin);
  EXPECT_LT(first_late, kJoin + 5) << "a viewer joining mid-GOP waits for no publisher keyframe";
  EXPECT_GT(judged, 30);
  EXPECT_EQ(visible, 0) << "a face visible after the switch to anonymize";
  EXPECT_GE(visible_bypass, judged_bypass * 9 / 10) << "the judge must see the faces bypass forwards";
  EXPECT_EQ(viewer.rx->stats().lost, 0u) << "one continuous RTP stream across the switches";
  EXPECT_TRUE(st.forwarding);
}

TEST(LiveSession, BypassForwardsThePublishersFramesAcrossModeSwitches) { BypassAcrossModeSwitches(false); }
TEST(LiveSession, BypassForwardsOnArrivalAcrossModeSwitchesOnTheExecutor) { BypassAcrossModeSwitches(true); }
}  // namespace
}  // namespace veil
