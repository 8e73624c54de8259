#include "privacy/privacy_stage.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <chrono>
#include <set>
#include <thread>

#include "core/clock.h"
#include "fake_detector.h"

namespace veil {
namespace {

using test::FakeDetector;

FramePtr Textured(int w = 320, int h = 180, int64_t index = 0) {
  auto f = MakeFrame(w, h);
  for (const Plane* p : {&f->y, &f->u, &f->v})
    for (int y = 0; y < p->height; ++y)
      for (int x = 0; x < p->width; ++x) p->row(y)[x] = uint8_t((x * 7 + y * 13 + (x * y) % 17) & 0xff);
  f->index = index;
  return f;
}

// A uniform dark frame: another shot than Textured's.
FramePtr Flat(int w, int h, int64_t index) {
  auto f = MakeFrame(w, h);
  for (const Plane* p : {&f->y, &f->u, &f->v})
    for (int y = 0; y < p->height; ++y) std::fill(p->row(y), p->row(y) + p->width, 16);
  f->index = index;
  return f;
}

bool SamePixels(const Frame& a, const Frame& b, const Rect& r) {
  for (int y = r.y0; y < r.y1; ++y)
    for (int x = r.x0; x < r.x1; ++x)
      if (a.y.row(y)[x] != b.y.row(y)[x]) return false;
  return true;
}

PrivacyConfig Cfg(int every = 3) {
  PrivacyConfig c;
  c.detect_box = {160, 90};  // half of the 320x180 test frames
  c.detect_every = every;
  c.scene_cut = false;
  return c;
}

// Cfg with scene cuts on and results that stay fresh for a second (no fail-closed by age).
PrivacyConfig CutCfg(int every) {
  PrivacyConfig c = Cfg(every);
  c.max_result_age_ms = 1000;
  c.scene_cut = true;
  return c;
}

TEST(PrivacyStage, BypassTouchesNothing) {
  FakeDetector d;
  auto c = Cfg();
  c.mode = Mode::kBypass;
  PrivacyStage s(c, &d);
  auto f = Textured(), ref = Textured();
  auto rep = s.Process(*f);
  EXPECT_TRUE(SamePixels(*f, *ref, {0, 0, 320, 180}));
  EXPECT_EQ(d.Calls(), 0);
  EXPECT_FALSE(rep.fail_closed);
}

TEST(PrivacyStage, FullBlurPixelatesTheWholeFrame) {
  auto c = Cfg();
  c.mode = Mode::kFullBlur;
  PrivacyStage s(c, nullptr);
  auto f = Textured(), ref = Textured();
  s.Process(*f);
  MosaicFullFrame(*ref, c.mosaic.full_frame_cell);
  EXPECT_TRUE(SamePixels(*f, *ref, {0, 0, 320, 180}));
}

TEST(PrivacyStage, AnonymizeMapsBoxesBackToFullResolution) {
  FakeDetector d;
  d.boxes = {{{40, 20, 20, 20}, 0.9f}};  // in 160x90 detection space
  PrivacyStage s(Cfg(), &d);
  auto f = Textured(), ref = Textured();
  auto rep = s.Process(*f);
  ASSERT_EQ(d.sizes.front(), cv::Size(160, 90));
  ASSERT_TRUE(rep.detected);
  ASSERT_FALSE(rep.fail_closed);
  ASSERT_EQ(rep.rects.size(), 1u);
  const Rect r = rep.rects[0];
  // Face at (80,40) 40x40 full-res, grown by margin and uncertainty: covers it.
  EXPECT_LE(r.x0, 80);
  EXPECT_LE(r.y0, 40);
  EXPECT_GE(r.x1, 120);
  EXPECT_GE(r.y1, 80);
  EXPECT_FALSE(SamePixels(*f, *ref, {80, 40, 120, 80}));
  EXPECT_TRUE(SamePixels(*f, *ref, {200, 100, 320, 180}));  // far away: untouched
}

// privacy.detect_trim: the detector is shown the copy trimmed to its 32-px grid, and what it finds
// lands where it is in the frame. 320x180 fitted into 320x164 is a 290x164 copy; trimmed, 288x160
// from (1, 2). A box at (100, 50) of what the detector saw is at (101, 52) of the copy, at
// (111.4, 57.1) 22x22 of the frame.
TEST(PrivacyStage, TrimmedDetectionWindowMapsBoxesBackToTheFrame) {
  for (const bool trim : {false, true}) {
    FakeDetector d;
    d.boxes = {{{100, 50, 20, 20}, 0.9f}};
    auto c = Cfg();
    c.detect_box = {320, 164};
    c.detect_trim = trim;
    PrivacyStage s(c, &d);
    auto f = Textured(), ref = Textured();
    auto rep = s.Process(*f);
    ASSERT_EQ(d.sizes.front(), trim ? cv::Size(288, 160) : cv::Size(290, 164));
    ASSERT_EQ(rep.rects.size(), 1u);
    const Rect r = rep.rects[0];
    const float x = (100 + (trim ? 1 : 0)) * 320.f / 290, y = (50 + (trim ? 2 : 0)) * 180.f / 164;
    EXPECT_LE(r.x0, int(x)) << trim;
    EXPECT_LE(r.y0, int(y)) << trim;
    EXPECT_GE(r.x1, int(std::ceil(x + 20 * 320.f / 290))) << trim;
    EXPECT_GE(r.y1, int(std::ceil(y + 20 * 180.f / 164))) << trim;
    // The mask is centred on the face: its middle within a pixel of the face's.
    EXPECT_NEAR((r.x0 + r.x1) / 2.0, x + 10 * 320.f / 290, 1.0) << trim;
    EXPECT_NEAR((r.y0 + r.y1) / 2.0, y + 10 * 180.f / 164, 1.0) << trim;
  }
}

TEST(PrivacyStage, DetectsOnCadenceAndTracksBetween) {
  FakeDetector d;
  d.boxes = {{{40, 20, 20, 20}, 0.9f}};
  PrivacyStage s(Cfg(3), &d);
  int detected = 0;
  for (int i = 0; i < 9; ++i) {
    auto f = Textured(320, 180, i);
    auto rep = s.Process(*f);
    detected += rep.detected;
    EXPECT_EQ(rep.detected, i % 3 == 0) << i;
    EXPECT_EQ(rep.rects.size(), 1u) << "mask missing between detections, frame " << i;
  }
  EXPECT_EQ(detected, 3);
}

// A session's detection slot (server/period_phases.h): detections land on the frames whose index
// plus the offset is a multiple of the cadence, from the first slot on; a scene cut off the slot
// detects at once and the next slot brings the cadence back in line.
TEST(PrivacyStage, DetectionsFollowTheSessionsSlot) {
  FakeDetector d;
  PrivacyStage s(CutCfg(3), &d);
  s.set_detect_slot(1);  // slots: frames 2, 5, 8, ...
  std::vector<int64_t> detected;
  for (int i = 0; i < 16; ++i) {
    auto f = i == 9 ? Flat(320, 180, i) : Textured(320, 180, i);  // a cut at 9, off the slot (8, 11)
    if (i == 10) f = Textured(320, 180, i);                        // ... and another back
    if (s.Process(*f).detected) detected.push_back(i);
  }
  // 0: the first frame; 2, 5, 8: slots; 9 and 10: the cuts; 11, 14: slots.
  EXPECT_EQ(detected, (std::vector<int64_t>{0, 2, 5, 8, 9, 10, 11, 14}));
  s.set_detect_slot(-1);  // no slot: the count alone, from the last detection (14)
  detected.clear();
  for (int i = 16; i < 22; ++i)
    if (auto f = Textured(320, 180, i); s.Process(*f).detected) detected.push_back(i);
  EXPECT_EQ(detected, (std::vector<int64_t>{17, 20}));
}

TEST(PrivacyStage, FailedDetectionFailsClosedAndRetriesNextFrame) {
  FakeDetector d;
  d.boxes = {{{40, 20, 20, 20}, 0.9f}};
  PrivacyStage s(Cfg(3), &d);
  auto f0 = Textured(320, 180, 0);
  EXPECT_FALSE(s.Process(*f0).fail_closed);
  d.fail = true;
  for (int i = 1; i < 3; ++i) {  // between detections: fresh enough, tracked
    auto f = Textured(320, 180, i);
    EXPECT_FALSE(s.Process(*f).fail_closed);
  }
  for (int i = 3; i < 6; ++i) {  // detection fails: whole frame, every frame, retried each frame
    auto f = Textured(320, 180, i), ref = Textured(320, 180, i);
    auto rep = s.Process(*f);
    EXPECT_TRUE(rep.fail_closed) << i;
    EXPECT_TRUE(rep.detected) << i;
    MosaicFullFrame(*ref, Cfg().mosaic.full_frame_cell);
    EXPECT_TRUE(SamePixels(*f, *ref, {0, 0, 320, 180}));
  }
  d.fail = false;
  auto f6 = Textured(320, 180, 6);
  EXPECT_FALSE(s.Process(*f6).fail_closed);
  EXPECT_EQ(s.counters().fail_closed, 3);
  EXPECT_EQ(s.counters().detect_failures, 3);
}

TEST(PrivacyStage, NoDetectorMeansEveryAnonymizeFrameFailsClosed) {
  PrivacyStage s(Cfg(), nullptr);
  for (int i = 0; i < 4; ++i) {
    auto f = Textured(320, 180, i);
    EXPECT_TRUE(s.Process(*f).fail_closed);
  }
}

TEST(PrivacyStage, StaleResultFailsClosed) {
  FakeDetector d;
  auto c = Cfg(1);
  c.max_result_age_ms = 50;  // at 30 fps: a result older than one frame and a half
  PrivacyStage s(c, &d);
  auto f0 = Textured(320, 180, 0);
  EXPECT_FALSE(s.Process(*f0).fail_closed);
  auto f5 = Textured(320, 180, 5);  // frames 1-4 never arrived: index jump
  d.fail = true;
  EXPECT_TRUE(s.Process(*f5).fail_closed);
}

TEST(PrivacyStage, SceneCutForcesDetection) {
  FakeDetector d;
  PrivacyStage s(CutCfg(10), &d);
  auto a = Textured(320, 180, 0);
  s.Process(*a);
  auto b = Textured(320, 180, 1);
  EXPECT_FALSE(s.Process(*b).detected);
  auto dark = Flat(320, 180, 2);  // a different shot
  auto rep = s.Process(*dark);
  EXPECT_TRUE(rep.scene_cut);
  EXPECT_TRUE(rep.detected);
}

// The leakcheck clip showed tracks of the previous shot coasting over the new
// one for max_coast frames: masks over faces that are no longer there.
TEST(PrivacyStage, ASceneCutDropsTheOldShotsMasksWhenItsDetectionComes) {
  FakeDetector d;
  d.boxes = {{{20, 20, 30, 30}, 0.9f}};  // detection-copy coordinates: (40, 40) 60x60 in the frame
  PrivacyStage s(CutCfg(10), &d);
  auto a = Textured(320, 180, 0);
  ASSERT_EQ(s.Process(*a).masks, 1);
  d.boxes = {{{110, 50, 30, 30}, 0.9f}};  // the new shot has its face elsewhere
  auto dark = Flat(320, 180, 1);
  auto rep = s.Process(*dark);
  ASSERT_TRUE(rep.scene_cut);
  ASSERT_EQ(rep.masks, 1) << "only the new shot's face is masked";
  EXPECT_GE(rep.rects[0].x0, 180);
}

// A publisher that changes resolution: the tracks (in the old geometry) go, and the new size is
// detected on its first frame, even with scene-cut detection off and far from the cadence.
TEST(PrivacyStage, ResolutionChangeDropsTracksAndDetectsAtOnce) {
  FakeDetector d;
  d.boxes = {{{120, 60, 20, 20}, 0.9f}};  // 160x90 space: the bottom-right corner at 320x180
  auto c = Cfg(10);
  c.max_result_age_ms = 1000;
  PrivacyStage s(c, &d);
  auto a = Textured(320, 180, 0);
  ASSERT_EQ(s.Process(*a).rects.size(), 1u);
  d.boxes = {{{10, 10, 10, 10}, 0.9f}};  // the new picture's face, elsewhere
  auto b = Textured(640, 360, 1);
  const auto rep = s.Process(*b);
  EXPECT_TRUE(rep.detected) << "the first frame of the new size is detected";
  EXPECT_TRUE(rep.scene_cut);
  EXPECT_EQ(s.counters().resolution_changes, 1);
  ASSERT_EQ(rep.rects.size(), 1u) << "only the new detection is masked: the old track was dropped";
  EXPECT_LT(rep.rects[0].x1, 200) << "the new box, at the new scale (top-left)";
  auto c2 = Textured(640, 360, 2);
  EXPECT_FALSE(s.Process(*c2).detected) << "same size again: back to the cadence";
  EXPECT_EQ(s.counters().resolution_changes, 1);
}

TEST(PrivacyStage, ModeSwitchTakesEffectOnTheNextFrame) {
  FakeDetector d;
  PrivacyStage s(Cfg(), &d);
  s.set_mode(Mode::kBypass);
  auto f = Textured(), ref = Textured();
  s.Process(*f);
  EXPECT_TRUE(SamePixels(*f, *ref, {0, 0, 320, 180}));
  s.set_mode(Mode::kFullBlur);
  auto g = Textured();
  EXPECT_EQ(s.Process(*g).rects.size(), 1u);
  EXPECT_FALSE(SamePixels(*g, *ref, {0, 0, 320, 180}));
  s.set_mode(Mode::kAnonymize);
  auto h = Textured();
  EXPECT_TRUE(s.Process(*h).detected);
}

TEST(PrivacyStage, AutoCadenceFollowsDetectorCost) {
  FakeDetector d;
  d.sleep_ms = 12;
  auto c = Cfg(0);
  c.detect_budget_ms = 5;
  c.max_auto_every = 6;
  PrivacyStage s(c, &d);
  for (int i = 0; i < 20; ++i) {
    auto f = Textured(320, 180, i);
    s.Process(*f);
  }
  EXPECT_GE(s.current_every(), 3);  // 12+ ms per detection / 5 ms budget
  EXPECT_LE(s.current_every(), 6);
}

// Live mode: detection goes through the shared scheduler, frames keep flowing.
struct AsyncHarness {
  MetricsRegistry metrics;
  FakeDetector* det = nullptr;
  std::unique_ptr<InferenceScheduler> sched;
  AsyncHarness() {
    auto s = InferenceScheduler::Create(
        {},
        [this]() -> Result<std::unique_ptr<Detector>> {
          auto d = std::make_unique<FakeDetector>();
          d->boxes = {{{40, 20, 20, 20}, 0.9f}};
          det = d.get();
          return std::unique_ptr<Detector>(std::move(d));
        },
        &metrics, "local");
    EXPECT_TRUE(s.ok());
    sched = std::move(*s);
  }
  void WaitIdle() {
    const double until = NowMs() + 5000;
    while ((sched->pending() > 0 || sched->in_flight() > 0) && NowMs() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

TEST(PrivacyStageAsync, FailsClosedUntilTheFirstResultThenTracks) {
  AsyncHarness h;
  PrivacyStage s(Cfg(3), h.sched.get(), 7);
  auto f0 = Textured(320, 180, 0);
  const FrameReport first = s.Process(*f0);
  EXPECT_TRUE(first.fail_closed);  // nothing known yet: whole frame
  EXPECT_TRUE(first.awaiting_shot) << "its detection is on its way";
  h.WaitIdle();
  for (int i = 1; i < 10; ++i) {
    auto f = Textured(320, 180, i);
    auto rep = s.Process(*f);
    EXPECT_FALSE(rep.fail_closed) << i;
    EXPECT_EQ(rep.rects.size(), 1u) << i;
    h.WaitIdle();
  }
  EXPECT_EQ(s.counters().fail_closed, 1);
  EXPECT_EQ(s.counters().detections_run, 4);  // frames 0, 3, 6, 9
}

TEST(PrivacyStageAsync, StalledDetectorFailsClosedWithinTheAgeLimitAndRecovers) {
  AsyncHarness h;
  auto c = Cfg(3);
  c.max_result_age_ms = 200;  // 6 frames at 30 fps
  PrivacyStage s(c, h.sched.get(), 1);
  for (int i = 0; i < 3; ++i) {
    auto f = Textured(320, 180, i);
    s.Process(*f);
    h.WaitIdle();
  }
  h.det->sleep_ms = 300;  // the AI path stalls: no fresh results
  int first_closed = -1;
  for (int i = 3; i < 20; ++i) {
    auto f = Textured(320, 180, i), ref = Textured(320, 180, i);
    auto rep = s.Process(*f);
    if (rep.fail_closed && first_closed < 0) first_closed = i;
    if (i >= 7) {
      EXPECT_TRUE(rep.fail_closed) << "frame " << i << " left with only a stale result";
      EXPECT_FALSE(rep.awaiting_shot) << "a stalled AI path is not a cut: nothing may be held";
      MosaicFullFrame(*ref, c.mosaic.full_frame_cell);
      EXPECT_TRUE(SamePixels(*f, *ref, {0, 0, 320, 180}));
    }
  }
  // The newest result is frame 0's (detection every 3rd frame; frame 3's is
  // stuck): frames 1-6 are within 200 ms of it, frame 7 is 233 ms past it.
  EXPECT_EQ(first_closed, 7);
  h.det->sleep_ms = 0;
  h.WaitIdle();
  for (int i = 20; i < 30; ++i) {
    auto f = Textured(320, 180, i);
    s.Process(*f);
    h.WaitIdle();
  }
  auto last = Textured(320, 180, 30);
  EXPECT_FALSE(s.Process(*last).fail_closed);  // recovered
}

TEST(PrivacyStageAsync, FailedDetectionFailsClosedUntilASuccess) {
  AsyncHarness h;
  PrivacyStage s(Cfg(1), h.sched.get(), 1);
  auto f0 = Textured(320, 180, 0);
  s.Process(*f0);
  h.WaitIdle();
  h.det->fail = true;
  auto f1 = Textured(320, 180, 1);
  EXPECT_FALSE(s.Process(*f1).fail_closed);  // result of frame 0 is fresh; frame 1's request fails
  h.WaitIdle();
  auto f2 = Textured(320, 180, 2);
  const FrameReport failed = s.Process(*f2);
  EXPECT_TRUE(failed.fail_closed);
  EXPECT_FALSE(failed.awaiting_shot) << "a failed detection is not a cut";
  h.det->fail = false;
  h.WaitIdle();
  auto f3 = Textured(320, 180, 3);
  s.Process(*f3);
  h.WaitIdle();
  auto f4 = Textured(320, 180, 4);
  EXPECT_FALSE(s.Process(*f4).fail_closed);
  EXPECT_GE(s.counters().detect_failures, 1);
}

TEST(PrivacyStageAsync, SceneCutFailsClosedUntilTheNewShotIsDetected) {
  AsyncHarness h;
  auto c = Cfg(3);
  c.scene_cut = true;
  PrivacyStage s(c, h.sched.get(), 1);
  for (int i = 0; i < 3; ++i) {
    auto f = Textured(320, 180, i);
    s.Process(*f);
    h.WaitIdle();
  }
  h.det->sleep_ms = 100;  // the new shot's detection takes a while
  auto cut = Flat(320, 180, 3);
  auto rep = s.Process(*cut);
  EXPECT_TRUE(rep.scene_cut);
  EXPECT_TRUE(rep.fail_closed) << "a new shot must not be shown before it is detected";
  EXPECT_TRUE(rep.awaiting_shot);
  h.WaitIdle();
  h.det->sleep_ms = 0;
  auto next = MakeFrame(320, 180);
  CopyFrame(*cut, *next);
  next->index = 4;
  EXPECT_FALSE(s.Process(*next).fail_closed);
}

// privacy.cut_wait_ms: a frame nothing describes yet (the first, a scene cut) waits for its own
// detection instead of leaving as a whole-frame mosaic, when that detection comes back in time.
TEST(PrivacyStageAsync, AFrameWithNothingKnownWaitsForItsOwnDetection) {
  AsyncHarness h;
  auto c = Cfg(3);
  c.scene_cut = true;
  c.cut_wait_ms = 2000;  // generous: sanitizer builds are slow; the detector answers in ~30 ms
  PrivacyStage s(c, h.sched.get(), 1);
  h.det->sleep_ms = 30;
  auto f0 = Textured(320, 180, 0), ref0 = Textured(320, 180, 0);
  FrameReport rep = s.Process(*f0);
  EXPECT_FALSE(rep.fail_closed) << "the first frame waited for its detection";
  ASSERT_EQ(rep.rects.size(), 1u);
  EXPECT_GE(rep.ms_wait, 20.0);
  EXPECT_LT(rep.ms_wait, 1500.0) << "the result's arrival ends the wait";
  // The fake's box (40, 20, 20, 20) in the 160x90 copy is (80, 40, 40, 40) here: pixelated,
  // and the picture away from it untouched.
  EXPECT_FALSE(SamePixels(*f0, *ref0, {90, 50, 110, 70}));
  EXPECT_TRUE(SamePixels(*f0, *ref0, {200, 100, 320, 180}));
  for (int i = 1; i < 3; ++i) {
    auto f = Textured(320, 180, i);
    rep = s.Process(*f);
    EXPECT_FALSE(rep.fail_closed) << i;
    EXPECT_EQ(rep.ms_wait, 0.0) << i << ": a frame with a fresh result does not wait";
    h.WaitIdle();
  }
  auto cut = Flat(320, 180, 3);
  rep = s.Process(*cut);
  EXPECT_TRUE(rep.scene_cut);
  EXPECT_FALSE(rep.fail_closed) << "the cut waited for the new shot's detection";
  EXPECT_EQ(rep.rects.size(), 1u);
  EXPECT_EQ(s.counters().cut_waits, 2);
  EXPECT_EQ(s.counters().cut_wait_timeouts, 0);
  EXPECT_EQ(s.counters().fail_closed, 0);
}

TEST(PrivacyStageAsync, ADetectionLaterThanTheWaitStillFailsClosed) {
  AsyncHarness h;
  auto c = Cfg(3);
  c.scene_cut = true;
  c.cut_wait_ms = 20;
  PrivacyStage s(c, h.sched.get(), 1);
  h.det->sleep_ms = 400;
  auto f0 = Textured(320, 180, 0), ref0 = Textured(320, 180, 0);
  const FrameReport rep = s.Process(*f0);
  EXPECT_TRUE(rep.fail_closed) << "no detection within the wait: whole-frame mosaic";
  MosaicFullFrame(*ref0, c.mosaic.full_frame_cell);
  EXPECT_TRUE(SamePixels(*f0, *ref0, {0, 0, 320, 180}));
  EXPECT_GE(rep.ms_wait, 19.0);
  EXPECT_LT(rep.ms_wait, 390.0) << "the wait is bounded by cut_wait_ms, not the detection";
  EXPECT_EQ(s.counters().cut_waits, 1);
  EXPECT_EQ(s.counters().cut_wait_timeouts, 1);
  h.WaitIdle();
  // A failed detection ends the wait at once, and the frame fails closed.
  h.det->sleep_ms = 0;
  h.det->fail = true;
  auto c2 = c;
  c2.cut_wait_ms = 2000;
  PrivacyStage s2(c2, h.sched.get(), 2);
  auto g0 = Textured(320, 180, 0);
  const FrameReport rep2 = s2.Process(*g0);
  EXPECT_TRUE(rep2.fail_closed);
  EXPECT_LT(rep2.ms_wait, 1500.0);
  EXPECT_EQ(s2.counters().cut_wait_timeouts, 0);
}

// A detection sink that holds the requests until the test answers them.
struct HeldSink : DetectionSink {
  std::vector<DetectRequest> held;
  void Submit(DetectRequest r) override { held.push_back(std::move(r)); }
  void Answer(size_t i, Detections d) {
    DetectResult res;
    res.session = held.at(i).session;
    res.frame_index = held[i].frame_index;
    res.detections = std::move(d);
    held[i].done(std::move(res));
  }
};

// privacy.detect_slack_ms: a detection on the cadence, while fresh masks cover the frames, may be
// ordered later; one that nothing describes the picture without may not: the first frame's, a
// scene cut's, and the retry after a failed one.
TEST(PrivacyStageAsync, OnlyADetectionOnTheCadenceHasSlack) {
  HeldSink sink;
  auto c = CutCfg(3);
  c.detect_slack_ms = 25;
  PrivacyStage s(c, &sink, 1);
  std::vector<int64_t> asked;
  int64_t i = 0;
  const auto process = [&](FramePtr f) {
    f->index = i++;
    const size_t before = sink.held.size();
    const FrameReport r = s.Process(*f);
    if (sink.held.size() > before) asked.push_back(f->index);
    return r;
  };
  EXPECT_TRUE(process(Textured()).fail_closed);  // frame 0, the first: asked at once
  sink.Answer(0, {{{40, 20, 20, 20}, 0.9f}});
  for (int k = 0; k < 3; ++k) EXPECT_FALSE(process(Textured()).fail_closed);  // 1, 2, 3 (on the cadence)
  sink.Answer(1, {{{40, 20, 20, 20}, 0.9f}});
  EXPECT_TRUE(process(Flat(320, 180, 0)).scene_cut);  // 4: a cut, asked at once
  DetectResult failed;
  failed.session = 1;
  failed.frame_index = 4;
  failed.outcome = DetectOutcome::kFailed;
  sink.held[2].done(std::move(failed));
  process(Flat(320, 180, 0));  // 5: the failure is seen, the retry asked
  sink.Answer(3, {});
  for (int k = 0; k < 3; ++k) process(Flat(320, 180, 0));  // 6, 7, 8: back on the cadence at 8
  ASSERT_EQ(asked, (std::vector<int64_t>{0, 3, 4, 5, 8}));
  ASSERT_EQ(sink.held.size(), 5u);
  const std::vector<double> want{0, 25, 0, 0, 25};
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(sink.held[k].slack_ms, want[k]) << "frame " << asked[k];
}

// Load shedding switches the trimmed window on and off between a request and its result
// (server/live_session.cpp): the result is mapped through the window its request showed, not the
// one in use when it comes back. The copy as in TrimmedDetectionWindowMapsBoxesBackToTheFrame:
// 290x164, trimmed 288x160 from (1, 2); the two mappings are 2.2 px apart vertically.
TEST(PrivacyStageAsync, AResultIsMappedThroughTheWindowItsRequestShowed) {
  for (const bool trimmed_at_submit : {false, true}) {
    HeldSink sink;
    auto c = Cfg(3);
    c.detect_box = {320, 164};
    PrivacyStage s(c, &sink, 1);
    EXPECT_EQ(s.trim_steps(320, 180), 1);
    EXPECT_FALSE(s.trimming());
    s.set_shed_trim(trimmed_at_submit);
    EXPECT_EQ(s.trimming(), trimmed_at_submit);
    auto f0 = Textured(320, 180, 0);
    EXPECT_TRUE(s.Process(*f0).fail_closed);
    ASSERT_EQ(sink.held.size(), 1u);
    EXPECT_EQ(sink.held[0].image.size(), trimmed_at_submit ? cv::Size(288, 160) : cv::Size(290, 164));
    s.set_shed_trim(!trimmed_at_submit);  // switched while the request is out
    sink.Answer(0, {{{100, 50, 20, 20}, 0.9f}});
    auto f1 = Textured(320, 180, 1);
    const FrameReport rep = s.Process(*f1);
    ASSERT_FALSE(rep.fail_closed) << trimmed_at_submit;
    ASSERT_EQ(rep.rects.size(), 1u) << trimmed_at_submit;
    const Rect r = rep.rects[0];
    const float x = (100 + (trimmed_at_submit ? 1 : 0)) * 320.f / 290, y = (50 + (trimmed_at_submit ? 2 : 0)) * 180.f / 164;
    EXPECT_NEAR((r.x0 + r.x1) / 2.0, x + 10 * 320.f / 290, 1.0) << trimmed_at_submit;
    EXPECT_NEAR((r.y0 + r.y1) / 2.0, y + 10 * 180.f / 164, 1.0) << trimmed_at_submit;
  }
}

// The detection copies handed to the scheduler are kept and reused once no request holds them
// (a fresh one per request page-faulted on every detection): a copy still held is never written
// again, a fourth request while three are held gets a fresh one, and a released copy comes back.
TEST(PrivacyStageAsync, DetectionCopiesAreReusedOnlyOnceNoRequestHoldsThem) {
  HeldSink sink;
  const PrivacyConfig c = Cfg(1);  // a detection every frame
  PrivacyStage s(c, &sink, 1);
  std::vector<cv::Mat> expected;  // each request's copy as made from its own frame, kept apart
  auto process = [&](int i) {
    auto f = Textured(320, 180, i);
    for (int y = 0; y < f->y.height; ++y)
      for (int x = 0; x < f->y.width; ++x) f->y.row(y)[x] = uint8_t(f->y.row(y)[x] + 40 * i);
    cv::Mat want;
    DownscaleToBgr(*f, FitSize(320, 180, c.detect_box), want);
    expected.push_back(want.clone());
    s.Process(*f);
  };
  auto same = [](const cv::Mat& a, const cv::Mat& b) { return a.size() == b.size() && cv::norm(a, b, cv::NORM_INF) == 0; };
  for (int i = 0; i < 4; ++i) process(i);
  ASSERT_EQ(sink.held.size(), 4u);
  std::set<const uchar*> buffers;
  for (const auto& r : sink.held) buffers.insert(r.image.datastart);
  EXPECT_EQ(buffers.size(), 4u) << "three kept copies and a fresh one, none shared";
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(same(sink.held[i].image, expected[i])) << "request " << i;
  // The scheduler lets go of request 1: its copy is the next request's; the others stay as they were.
  const uchar* released = sink.held[1].image.datastart;
  sink.held[1] = DetectRequest{};
  process(4);
  ASSERT_EQ(sink.held.size(), 5u);
  EXPECT_EQ(sink.held[4].image.datastart, released);
  for (size_t i : {0u, 2u, 3u, 4u}) EXPECT_TRUE(same(sink.held[i].image, expected[i])) << "request " << i;
  // Held by nobody but the stage once every request is done: the kept three go round.
  sink.held.clear();
  std::set<const uchar*> later;
  for (int i = 5; i < 11; ++i) {
    process(i);
    later.insert(sink.held.back().image.datastart);
    EXPECT_TRUE(same(sink.held.back().image, expected.back())) << "request " << i;
    sink.held.clear();
  }
  EXPECT_EQ(later.size(), 1u) << "one free copy is enough when each request is done before the next";
}

// The trimmed window is a shedding step only where it changes what the detector is shown.
TEST(PrivacyStage, TrimStepsOnlyWhereTrimmingChangesTheWindow) {
  auto c = Cfg();
  c.detect_box = {640, 360};
  EXPECT_EQ(PrivacyStage(c, nullptr).trim_steps(1280, 720), 1) << "640x360 -> 640x352";
  EXPECT_EQ(PrivacyStage(c, nullptr).trim_steps(640, 480), 1) << "480x360 -> 480x352";
  EXPECT_EQ(PrivacyStage(c, nullptr).trim_steps(1280, 704), 0) << "640x352: on the grid already";
  c.detect_trim = true;
  EXPECT_EQ(PrivacyStage(c, nullptr).trim_steps(1280, 720), 0) << "trims already";
  EXPECT_EQ(PrivacyStage(Cfg(), nullptr).trim_steps(320, 180), 0) << "160x90: 64 rows would lose too much";
}

TEST(PrivacyConfig, RejectsContradictionsAndAbsurdValues) {
  PrivacyConfig c;
  EXPECT_TRUE(Validate(c).ok());
  c.detect_every = 30;  // a second between detections, but results expire after 200 ms
  EXPECT_FALSE(Validate(c).ok());
  c = {};
  c.detect_box = {10, 10};
  EXPECT_FALSE(Validate(c).ok());
  c = {};
  c.fps = 0;
  EXPECT_FALSE(Validate(c).ok());
  c = {};
  c.cut_wait_ms = -1;
  EXPECT_FALSE(Validate(c).ok());
  c.cut_wait_ms = 5000;
  EXPECT_FALSE(Validate(c).ok());
  c.cut_wait_ms = 15;
  EXPECT_TRUE(Validate(c).ok());
  c.detect_slack_ms = 99;  // under half of max_result_age_ms (200), the request's own deadline
  EXPECT_TRUE(Validate(c).ok());
  c.detect_slack_ms = 100;
  EXPECT_FALSE(Validate(c).ok());
  c.detect_slack_ms = -1;
  EXPECT_FALSE(Validate(c).ok());
  EXPECT_FALSE(ParseMode("blur").ok());
  EXPECT_EQ(*ParseMode("full_blur"), Mode::kFullBlur);
}

}  // namespace
}  // namespace veil
