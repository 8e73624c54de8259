// What a session's detections cost a node, beside the default's the anonymize priors hold
// (server/detection_timing.h).
#include "server/detection_timing.h"

#include <gtest/gtest.h>

#include "config/config.h"

namespace veil {
namespace {

TEST(DetectionTiming, APassIsSpreadOverItsCadence) {
  PrivacyConfig p;
  p.detect_every = 3;
  EXPECT_DOUBLE_EQ(DetectionMsPerFrame(6.0, p), 2.0);
  p.detect_every = 1;
  EXPECT_DOUBLE_EQ(DetectionMsPerFrame(6.0, p), 6.0);
  // Auto: the cadence the budget gives the pass, ceil(6 / 2.5) = 3, held to [1, max_auto_every].
  p.detect_every = 0;
  p.detect_budget_ms = 2.5;
  p.max_auto_every = 6;
  EXPECT_DOUBLE_EQ(DetectionMsPerFrame(6.0, p), 2.0);
  EXPECT_DOUBLE_EQ(DetectionMsPerFrame(2.0, p), 2.0);   // within the budget: every frame
  EXPECT_DOUBLE_EQ(DetectionMsPerFrame(60.0, p), 10.0);  // past max_auto_every: every 6th
  EXPECT_DOUBLE_EQ(DetectionMsPerFrame(0, p), 0);
}

TEST(DetectionTiming, TheSameWorkIsToldApart) {
  const Settings d;
  EXPECT_TRUE(SameDetectionWork(d.detector, d.privacy, d.detector, d.privacy));
  PrivacyConfig p = d.privacy;
  p.cut_hold_frames = d.privacy.cut_hold_frames + 1;  // what a frame does, not the detection
  EXPECT_TRUE(SameDetectionWork(d.detector, p, d.detector, d.privacy));
  p = d.privacy;
  p.detect_every = d.privacy.detect_every + 1;
  EXPECT_FALSE(SameDetectionWork(d.detector, p, d.detector, d.privacy));
  p = d.privacy;
  p.detect_box = {1280, 720};
  EXPECT_FALSE(SameDetectionWork(d.detector, p, d.detector, d.privacy));
  p = d.privacy;
  p.detect_trim = !d.privacy.detect_trim;
  EXPECT_FALSE(SameDetectionWork(d.detector, p, d.detector, d.privacy));
  DetectorConfig other = d.detector;
  other.family = "ultraface";
  EXPECT_FALSE(SameDetectionWork(other, d.privacy, d.detector, d.privacy));
  // The default's settings time nothing.
  auto x = MeasureDetectionExtra(d.detector, d.privacy);
  ASSERT_TRUE(x.ok()) << x.error();
  EXPECT_EQ(x->configured_ms, 0);
  EXPECT_EQ(x->extra_ms, 0);
}

// It times the detector: a copy with four times the pixels, detected on every frame instead of
// every 3rd, costs several times the default's a frame (12x the work; asserted at 3x).
TEST(DetectionTiming, ABiggerCopyOnEveryFrameCostsMoreThanTheDefault) {
  const Settings d;
  PrivacyConfig p = d.privacy;
  p.detect_box = {1280, 720};
  p.detect_every = 1;
  auto x = MeasureDetectionExtra(d.detector, p);
  ASSERT_TRUE(x.ok()) << x.error();
  EXPECT_GT(x->default_ms, 0);
  EXPECT_GT(x->configured_ms, 3 * x->default_ms);
  EXPECT_DOUBLE_EQ(x->extra_ms, x->configured_ms - x->default_ms);
  // A missing model is an error, not a figure.
  DetectorConfig missing = d.detector;
  missing.model_path = "/nonexistent/model.onnx";
  EXPECT_FALSE(TimeDetectionPassMs(missing, p).ok());
}

}  // namespace
}  // namespace veil
