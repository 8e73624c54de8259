#include "vision/second_look.h"

#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "vision/tracker.h"

namespace veil {
namespace {

// An inner detector whose first call (the detection copy) returns `first`, and whose second
// call (the crops) sees a face in a crop exactly when the crop's centre pixel is white: it then
// returns a box around the crop's centre at 0.9. Records the crops it was shown.
class ScriptedDetector : public Detector {
 public:
  Detections first;
  bool fail_second = false;
  std::vector<cv::Mat> crops;
  int calls = 0;
  std::string name() const override { return "scripted"; }
  bool native_batch() const override { return true; }
  Result<std::vector<Detections>> Detect(const std::vector<cv::Mat>& images, float) override {
    if (calls++ == 0) return std::vector<Detections>(images.size(), first);
    if (fail_second) return Status::Error("injected failure");
    crops = images;
    std::vector<Detections> out;
    for (const cv::Mat& im : images) {
      const cv::Vec3b c = im.at<cv::Vec3b>(im.rows / 2, im.cols / 2);
      Detections d;
      if (c[0] == 255) d.push_back({{im.cols / 2.f - 10, im.rows / 2.f - 10, 20, 20}, 0.9f});
      out.push_back(d);
    }
    return out;
  }
};

cv::Mat Picture() {
  cv::Mat im(360, 640, CV_8UC3, cv::Scalar::all(0));
  cv::rectangle(im, cv::Rect(100, 100, 20, 20), cv::Scalar::all(255), cv::FILLED);  // "a face"
  return im;
}

SecondLookParams On() {
  SecondLookParams p;
  p.score = 0.3f;
  return p;
}

TEST(SecondLook, DoubtsAnUncertainBoxWhereTheSecondPassSeesNothingAndKeepsTheRest) {
  auto inner = std::make_unique<ScriptedDetector>();
  ScriptedDetector* s = inner.get();
  s->first = {{{100, 100, 20, 20}, 0.3f},   // low score on the face: asked, seen
              {{400, 200, 20, 20}, 0.3f},   // low score on black: asked, not seen
              {{500, 50, 20, 20}, 0.8f}};   // high score on black: never asked
  SecondLookDetector d(std::move(inner), On());
  auto r = d.Detect({Picture()}, 0.15f);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->size(), 1u);
  const Detections& got = r->front();
  ASSERT_EQ(got.size(), 3u);  // nothing removed: the tracker decides what a doubtful box may do
  EXPECT_FALSE(got[0].doubtful);
  EXPECT_TRUE(got[1].doubtful);
  EXPECT_FALSE(got[2].doubtful);
  EXPECT_EQ(s->crops.size(), 2u);
  EXPECT_EQ(d.counts().asked, 2);
  EXPECT_EQ(d.counts().kept, 1);
  EXPECT_EQ(d.counts().doubted, 1);
  for (const cv::Mat& c : s->crops) EXPECT_EQ(c.size(), cv::Size(128, 128));
}

TEST(SecondLook, AFailedSecondPassLeavesTheFirstAsItWas) {
  auto inner = std::make_unique<ScriptedDetector>();
  inner->first = {{{400, 200, 20, 20}, 0.3f}};
  inner->fail_second = true;
  SecondLookDetector d(std::move(inner), On());
  auto r = d.Detect({Picture()}, 0.15f);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->front().size(), 1u);
  EXPECT_FALSE(r->front()[0].doubtful);
}

TEST(SecondLook, AsksAtMostMaxCropsPerImageAndKeepsTheRestUnasked) {
  auto inner = std::make_unique<ScriptedDetector>();
  inner->first = {{{400, 200, 20, 20}, 0.4f}, {{300, 200, 20, 20}, 0.3f}, {{200, 200, 20, 20}, 0.2f}};
  SecondLookParams p = On();
  p.max_crops = 2;
  SecondLookDetector d(std::move(inner), p);
  auto r = d.Detect({Picture()}, 0.15f);
  ASSERT_TRUE(r) << r.error();
  const Detections& got = r->front();
  EXPECT_TRUE(got[0].doubtful);
  EXPECT_TRUE(got[1].doubtful);
  EXPECT_FALSE(got[2].doubtful);  // the lowest score, past max_crops: unasked, so trusted
  EXPECT_EQ(d.counts().unasked, 1);
}

TEST(SecondLook, OffAsksNothing) {
  auto inner = std::make_unique<ScriptedDetector>();
  ScriptedDetector* s = inner.get();
  inner->first = {{{400, 200, 20, 20}, 0.3f}};
  SecondLookDetector d(std::move(inner), SecondLookParams{});
  auto r = d.Detect({Picture()}, 0.15f);
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->front()[0].doubtful);
  EXPECT_EQ(s->calls, 1);
}

// The crop is the box's surroundings, context x its larger side, scaled to side x side, with
// zeros past the image's edge; scale and origin map crop pixels back to the image.
TEST(SecondLook, CropGeometry) {
  cv::Mat im(360, 640, CV_8UC3);
  for (int y = 0; y < im.rows; ++y)
    for (int x = 0; x < im.cols; ++x) im.at<cv::Vec3b>(y, x) = cv::Vec3b(uint8_t(x % 200 + 50), uint8_t(y % 200 + 50), 7);
  SecondLookParams p = On();
  float scale = 0;
  cv::Point2f origin;
  const Box b{300, 150, 40, 20};  // centre (320, 160); crop side 2.5 * 40 = 100
  cv::Mat c = SecondLookCrop(im, b, p, &scale, &origin);
  ASSERT_EQ(c.size(), cv::Size(128, 128));
  EXPECT_NEAR(scale, 1.28f, 1e-3);
  EXPECT_NEAR(origin.x, 270, 0.5);
  EXPECT_NEAR(origin.y, 110, 0.5);
  // The crop's pixel at the box's centre shows the image's pixel there.
  const cv::Vec3b mid = c.at<cv::Vec3b>(int((320 - origin.x) * scale), int((160 - origin.y) * scale));
  EXPECT_NEAR(mid[0], 320 % 200 + 50, 3);
  EXPECT_NEAR(mid[1], 160 % 200 + 50, 3);
  // A box at the corner: the part of the crop outside the image is black.
  cv::Mat corner = SecondLookCrop(im, Box{0, 0, 20, 20}, p, &scale, &origin);
  EXPECT_EQ(corner.at<cv::Vec3b>(0, 0), cv::Vec3b(0, 0, 0));
  EXPECT_NE(corner.at<cv::Vec3b>(127, 127), cv::Vec3b(0, 0, 0));
}

TEST(SecondLook, ValidatesItsSettings) {
  EXPECT_TRUE(Validate(SecondLookParams{}));
  SecondLookParams p = On();
  p.side = 100;  // not a multiple of 32
  EXPECT_FALSE(Validate(p));
  p = On();
  p.score = 1.f;
  EXPECT_FALSE(Validate(p));
  p = On();
  p.max_crops = 0;
  EXPECT_FALSE(Validate(p));
  p = On();
  p.context = 0.5f;
  EXPECT_FALSE(Validate(p));
}

// The tracker starts no track from a doubtful detection, but lets one keep an existing track
// alive (second stage), unless doubtful_match is off.
TEST(SecondLook, TheTrackerStartsNoTrackFromADoubtfulDetection) {
  Tracker t;
  t.Predict();
  Detection doubt{{400, 200, 60, 60}, 0.3f, true};
  t.Update({doubt});
  EXPECT_TRUE(t.tracks().empty());
  Detection high_doubt{{400, 200, 60, 60}, 0.9f, true};
  t.Update({high_doubt});
  EXPECT_TRUE(t.tracks().empty());

  Tracker u;
  u.Predict();
  u.Update({{{400, 200, 60, 60}, 0.9f}});
  for (int i = 0; i < 3; ++i) u.Predict();
  ASSERT_EQ(u.tracks().size(), 1u);
  EXPECT_EQ(u.tracks()[0].frames_since_update, 3);
  u.Update({doubt});
  ASSERT_EQ(u.tracks().size(), 1u);
  EXPECT_EQ(u.tracks()[0].frames_since_update, 0);  // matched

  TrackerParams off;
  off.doubtful_match = false;
  Tracker v(off);
  v.Predict();
  v.Update({{{400, 200, 60, 60}, 0.9f}});
  for (int i = 0; i < 3; ++i) v.Predict();
  v.Update({doubt});
  ASSERT_EQ(v.tracks().size(), 1u);
  EXPECT_EQ(v.tracks()[0].frames_since_update, 3);  // ignored
}

// With doubtful_birth a doubtful detection starts a tentative track: masked, but doubtful matches
// never confirm it, so it dies tentative_frames after its last match instead of coasting; a
// detection the second look saw confirms it.
TEST(SecondLook, DoubtfulBirthStartsATentativeTrackOnlyASeenDetectionConfirms) {
  TrackerParams p;
  p.doubtful_birth = true;
  Tracker t(p);
  const Detection doubt{{400, 200, 60, 60}, 0.3f, true};
  t.Predict();
  t.Update({doubt});
  ASSERT_EQ(t.tracks().size(), 1u);
  EXPECT_FALSE(t.tracks()[0].confirmed);
  EXPECT_EQ(t.Masks(1280, 720).size(), 1u);
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 3; ++k) t.Predict();
    t.Update({doubt});
  }
  ASSERT_EQ(t.tracks().size(), 1u);
  EXPECT_FALSE(t.tracks()[0].confirmed);  // four doubtful matches: still tentative
  for (int k = 0; k <= p.tentative_frames; ++k) t.Predict();
  EXPECT_TRUE(t.tracks().empty());  // and gone tentative_frames + 1 frames after the last

  Tracker u(p);
  u.Predict();
  u.Update({doubt});
  u.Predict();
  u.Update({{{400, 200, 60, 60}, 0.3f}});  // seen by the second look
  ASSERT_EQ(u.tracks().size(), 1u);
  EXPECT_TRUE(u.tracks()[0].confirmed);
}

}  // namespace
}  // namespace veil
