// Detector accuracy on the annotated photos and privacy on the moving clip,
// at the default live settings. Thresholds are the values measured when the
// defaults were chosen, plus a small tolerance: a regression fails here.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace veil {
namespace {

TEST(Accuracy, YuNetPhotosAndMovingClipAtDefaults) {
  auto r = test::RunVeil("eval --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  const auto& p = j["photos"];
  // Reference (assets README, 640x640 letterbox, score 0.6): 0.866 and 0.889.
  EXPECT_GE(p["recall_ge40"].get<double>(), 0.85);
  EXPECT_GE(p["precision"].get<double>(), 0.85);
  EXPECT_GE(p["recall_ge20"].get<double>(), 0.79);
  const auto& m = j["motion"];
  EXPECT_GT(m["face_frames_ge40"].get<int>(), 9000);
  // Measured at the defaults (see README "Privacy figures"), plus tolerance.
  EXPECT_LE(m["leak_rate_all"].get<double>(), VEIL_LEAK_ALL_MAX) << m.dump(2);
  EXPECT_LE(m["leak_rate_clear"].get<double>(), VEIL_LEAK_CLEAR_MAX) << m.dump(2);
  EXPECT_LE(m["flicker_all"].get<int>(), VEIL_FLICKER_MAX) << m.dump(2);
  EXPECT_EQ(m["fail_closed_frames"].get<int>(), 0);
  // Judged on the pixels against the lossless frames (leakcheck's criteria, eval/pixel_judge.h):
  // regression bounds at the tight masks (docs/privacy.md: 1.63% / 0.46% / 7.6% mean, 19.7% p90 / 1.6%).
  const auto& px = m["pixel"];
  EXPECT_EQ(px["judged_frames"].get<int>(), m["frames"].get<int>() / 5) << px.dump(2);
  EXPECT_LE(px["leak_rate_all"].get<double>(), VEIL_PIXEL_LEAK_ALL_MAX) << px.dump(2);
  EXPECT_LE(px["leak_rate_clear"].get<double>(), VEIL_PIXEL_LEAK_CLEAR_MAX) << px.dump(2);
  EXPECT_LE(px["overblur_mean"].get<double>(), VEIL_OVERBLUR_MEAN_MAX) << px.dump(2);
  EXPECT_LE(px["overblur_p90"].get<double>(), VEIL_OVERBLUR_P90_MAX) << px.dump(2);
  EXPECT_LE(px["whole_frame_mosaic_share"].get<double>(), VEIL_WHOLE_FRAME_SHARE_MAX) << px.dump(2);
  // Over-blur split by what destroyed it (eval/motion_eval.h): the parts add up to the mean, and
  // no frame failed closed, so none of it is a whole-frame mosaic.
  double parts = 0;
  for (const auto& [part, v] : px["overblur_parts"].items()) parts += v.get<double>();
  EXPECT_NEAR(parts, px["overblur_mean"].get<double>(), 1e-9) << px.dump(2);
  EXPECT_EQ(px["overblur_parts"]["whole_frame"].get<double>(), 0.0) << px.dump(2);
}

}  // namespace
}  // namespace veil
