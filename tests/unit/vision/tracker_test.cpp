#include "vision/tracker.h"

#include <gtest/gtest.h>

namespace veil {
namespace {

Box At(float x, float y, float s = 60) { return {x, y, s, s}; }
bool Contains(const Box& outer, const Box& inner) {
  return outer.x <= inner.x && outer.y <= inner.y && outer.x2() >= inner.x2() && outer.y2() >= inner.y2();
}

TEST(Tracker, BirthFromHighScoreAndMaskCoversDetection) {
  Tracker t;
  t.Predict();
  t.Update({{At(100, 100), 0.9f}});
  ASSERT_EQ(t.tracks().size(), 1u);
  EXPECT_TRUE(t.tracks()[0].confirmed);
  auto m = t.Masks(1280, 720);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_TRUE(Contains(m[0].box, At(100, 100)));
  EXPECT_NEAR(m[0].face_w, 60, 1);
}

// With tracker.large_share 0.2, a large box (smaller side over 0.2 of 720 = 144 px) is not masked
// while the last 2 detections in a row missed it; a small one coasts as before. Off by default.
TEST(Tracker, ALargeBoxLosesItsMaskWhileDetectionsMissIt) {
  TrackerParams on;
  on.large_share = 0.2f;
  Tracker u(on);
  u.Predict();
  u.Update({{At(400, 200, 300), 0.9f}, {At(900, 200, 60), 0.9f}});
  ASSERT_EQ(u.Masks(1280, 720).size(), 2u);
  u.Predict();
  u.Update({});  // one detection misses both: both still masked
  EXPECT_EQ(u.Masks(1280, 720).size(), 2u);
  u.Predict();
  u.Update({});  // two in a row: the large one loses its mask, but its track lives on
  auto m = u.Masks(1280, 720);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_NEAR(m[0].face_w, 60, 1) << "the small one coasts";
  ASSERT_EQ(u.tracks().size(), 2u);
  u.Predict();
  u.Update({{At(400, 200, 300), 0.9f}});  // found again: the same track, masked again
  m = u.Masks(1280, 720);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(u.tracks().size(), 2u);
  EXPECT_EQ(u.tracks()[0].misses, 0);

  Tracker v;  // the default: no rule, a large box coasts like any other
  v.Predict();
  v.Update({{At(400, 200, 300), 0.9f}});
  for (int k = 0; k < 3; ++k) {
    v.Predict();
    v.Update({});
  }
  EXPECT_EQ(v.Masks(1280, 720).size(), 1u);
  on.large_misses = 0;
  EXPECT_FALSE(Validate(on));
}

// tracker.weak_coast: a track confirmed by low-score detections only coasts weak_coast frames;
// one that a detection ever scored at tracker.score coasts max_coast frames.
TEST(Tracker, ATrackSeenOnlyAtLowScoresCoastsWeakCoastFrames) {
  TrackerParams p;
  p.weak_coast_frames = 6;
  Tracker t(p);
  t.Predict();
  t.Update({{At(100, 100), 0.3f}, {At(600, 100), 0.3f}});
  t.Predict();
  t.Update({{At(100, 100), 0.3f}, {At(600, 100), 0.9f}});  // both matched again: both confirmed
  ASSERT_EQ(t.tracks().size(), 2u);
  EXPECT_TRUE(t.tracks()[0].confirmed && t.tracks()[1].confirmed);
  for (int f = 1; f <= 30; ++f) {
    t.Predict();
    t.Update({});
    const size_t want = f <= 6 ? 2u : 1u;
    ASSERT_EQ(t.Masks(1280, 720).size(), want) << "frame " << f << " without a detection";
  }
  EXPECT_NEAR(t.tracks()[0].box().x, 600, 2) << "the one seen at a high score coasts on";
  t.Predict();
  EXPECT_TRUE(t.tracks().empty()) << "...for max_coast frames";

  Tracker d;  // the default: 30 frames for both
  d.Predict();
  d.Update({{At(100, 100), 0.3f}});
  d.Predict();
  d.Update({{At(100, 100), 0.3f}});
  for (int f = 1; f <= 30; ++f) {
    d.Predict();
    d.Update({});
  }
  EXPECT_EQ(d.Masks(1280, 720).size(), 1u);
  p.weak_coast_frames = -1;
  EXPECT_FALSE(Validate(p));
}

TEST(Tracker, CoastsOnVelocityAndMaskGrowsWithUncertainty) {
  Tracker t;
  float x = 100;
  for (int f = 0; f < 15; ++f, x += 3) {  // a face moving 3 px/frame, seen every frame
    t.Predict();
    t.Update({{At(x, 200), 0.9f}});
  }
  double last_area = 0;
  for (int f = 0; f < 12; ++f, x += 3) {  // detector goes blind; the face keeps moving
    t.Predict();
    auto m = t.Masks(1280, 720);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_TRUE(Contains(m[0].box, At(x, 200))) << "face left its mask while coasting, frame " << f;
    EXPECT_GT(m[0].box.area(), last_area);
    last_area = m[0].box.area();
  }
  EXPECT_NEAR(t.tracks()[0].box().x, x - 3, 4.0);  // the prediction followed the motion
}

// The mask is bounded by motion, not by a growing covariance: a still face
// stays tightly masked between detections, a fast one stays inside its mask.
TEST(Tracker, MaskGrowthFollowsMeasuredMotion) {
  {
    Tracker t;
    for (int f = 0; f < 10; ++f) {  // a still face, detected every 3rd frame
      t.Predict();
      if (f % 3 == 0) t.Update({{At(400, 300, 100), 0.9f}});
    }
    t.Predict();
    t.Predict();  // two frames after a detection, as before the next one
    auto m = t.Masks(1280, 720);
    ASSERT_EQ(m.size(), 1u);
    EXPECT_TRUE(Contains(m[0].box, At(400, 300, 100)));
    // The mosaic margin is added later; the track itself adds at most 15% per side here
    // (the covariance model grew a fresh track by 36%, whatever the face did).
    EXPECT_LT(m[0].box.w, 130.f);
    EXPECT_LT(m[0].box.h, 130.f);
  }
  {
    Tracker t;
    float x = 100;
    for (int f = 0; f < 12; ++f, x += 15) {  // 15 px/frame: a fast pan
      t.Predict();
      t.Update({{At(x, 300, 80), 0.9f}});
    }
    for (int f = 0; f < 8; ++f, x += 15 + f) {  // blind, and the face accelerates
      t.Predict();
      auto m = t.Masks(1280, 720);
      ASSERT_EQ(m.size(), 1u);
      EXPECT_TRUE(Contains(m[0].box, At(x, 300, 80))) << "fast face left its mask, coasting frame " << f;
    }
  }
}

// A live result arrives a few frames after the frame it was taken on: the
// face has moved since, so its mask starts from that age, not from zero.
TEST(Tracker, ALateDetectionGrowsItsMaskByItsAge) {
  Tracker fresh, late;
  fresh.Predict();
  late.Predict();
  fresh.Update({{At(300, 300, 100), 0.9f}});
  late.Update({{At(300, 300, 100), 0.9f}}, /*age_frames=*/4);
  const Box a = fresh.Masks(1280, 720)[0].box, b = late.Masks(1280, 720)[0].box;
  EXPECT_GT(b.w, a.w + 2 * 4 * 0.02f * 100 - 1);  // 4 frames at the per-frame floor, both sides
  EXPECT_EQ(late.tracks()[0].frames_since_update, 4);
}

TEST(Tracker, AShotChangeKeepsOnlyTheTracksTheNextDetectionMatches) {
  Tracker t;
  t.Predict();
  t.Update({{At(100, 100), 0.9f}, {At(600, 300), 0.9f}});
  t.Predict();
  t.Update({{At(100, 100), 0.9f}, {At(600, 300), 0.9f}});
  ASSERT_EQ(t.tracks().size(), 2u);
  t.MarkShotChange();
  t.Predict();
  EXPECT_EQ(t.Masks(1280, 720).size(), 2u) << "until the new shot is detected, the old masks stay";
  t.Update({{At(602, 301), 0.9f}, {At(900, 500), 0.9f}});  // one face still there, one new
  ASSERT_EQ(t.tracks().size(), 2u) << "the unmatched track of the old shot went at once, not after max_coast";
  for (const auto& tr : t.tracks()) EXPECT_GT(tr.box().x, 500.f);
  t.Predict();
  t.Update({});  // a later miss: the surviving tracks coast as usual
  EXPECT_EQ(t.tracks().size(), 2u);
}

TEST(Tracker, DiesAfterMaxCoastFrames) {
  TrackerParams p;
  p.max_coast_frames = 10;
  Tracker t(p);
  t.Predict();
  t.Update({{At(100, 100), 0.9f}});
  for (int f = 0; f < 10; ++f) t.Predict();
  EXPECT_EQ(t.tracks().size(), 1u);
  t.Predict();
  EXPECT_TRUE(t.tracks().empty());
}

TEST(Tracker, LowScoreDetectionsKeepATrackAliveButDoNotConfirmAlone) {
  TrackerParams p;
  p.max_coast_frames = 5;
  p.tentative_frames = 2;
  Tracker t(p);
  t.Predict();
  t.Update({{At(100, 100), 0.9f}});
  for (int f = 0; f < 20; ++f) {  // only weak detections (e.g. a face turning away)
    t.Predict();
    t.Update({{At(101, 100), 0.35f}});
  }
  ASSERT_EQ(t.tracks().size(), 1u);
  EXPECT_EQ(t.tracks()[0].id, 1);

  Tracker u(p);
  u.Predict();
  u.Update({{At(400, 100), 0.3f}});  // a lone weak detection: masked now...
  EXPECT_EQ(u.Masks(1280, 720).size(), 1u);
  EXPECT_FALSE(u.tracks()[0].confirmed);
  for (int f = 0; f < 3; ++f) u.Predict();
  EXPECT_TRUE(u.tracks().empty());  // ...but gone when nothing confirms it
}

TEST(Tracker, IgnoresDetectionsBelowLowScore) {
  Tracker t;
  t.Predict();
  t.Update({{At(100, 100), 0.1f}});
  EXPECT_TRUE(t.tracks().empty());
}

TEST(Tracker, CrossingFacesKeepTheirIdentities) {
  Tracker t;
  float xa = 100, xb = 500;
  int64_t id_a = -1, id_b = -1;
  for (int f = 0; f < 60; ++f, xa += 6, xb -= 6) {
    t.Predict();
    if (f % 3 == 0) t.Update({{At(xa, 200), 0.9f}, {At(xb, 230), 0.9f}});  // detect every 3rd frame
    if (f == 0) {
      ASSERT_EQ(t.tracks().size(), 2u);
      id_a = t.tracks()[0].box().x < 300 ? t.tracks()[0].id : t.tracks()[1].id;
      id_b = id_a == t.tracks()[0].id ? t.tracks()[1].id : t.tracks()[0].id;
    }
  }
  ASSERT_EQ(t.tracks().size(), 2u);
  for (const auto& tr : t.tracks()) {
    if (tr.id == id_a) EXPECT_NEAR(tr.box().x, xa - 6, 12);  // a went right
    else if (tr.id == id_b) EXPECT_NEAR(tr.box().x, xb + 6, 12);  // b went left
    else ADD_FAILURE() << "identity switch: new track " << tr.id;
  }
}

TEST(Tracker, ValidatesParameters) {
  TrackerParams p;
  EXPECT_TRUE(Validate(p).ok());
  p.low_score = 0.8f;  // above high_score
  EXPECT_FALSE(Validate(p).ok());
  p = {};
  p.tentative_frames = 100;
  p.max_coast_frames = 10;
  EXPECT_FALSE(Validate(p).ok());
}

TEST(Kalman1D, ConvergesToConstantVelocity) {
  Kalman1D k;
  k.Init(0, 5, 5);
  for (int i = 1; i <= 50; ++i) {
    k.Predict(0.1f, 0.01f);
    k.Update(2.0f * i, 1.0f);
  }
  EXPECT_NEAR(k.v, 2.0, 0.1);
  EXPECT_NEAR(k.x, 100.0, 1.0);
}

}  // namespace
}  // namespace veil
