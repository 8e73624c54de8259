#include "server/snapshot.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

namespace veil {
namespace {

// A frame whose left half is red and right half blue (BT.601 limited-range YUV).
FramePtr TwoColours(int w, int h) {
  FramePtr f = MakeFrame(w, h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) f->y.row(y)[x] = x < w / 2 ? 81 : 41;
  for (int y = 0; y < f->u.height; ++y)
    for (int x = 0; x < f->u.width; ++x) {
      const bool left = x < f->u.width / 2;
      f->u.row(y)[x] = left ? 90 : 240;
      f->v.row(y)[x] = left ? 240 : 110;
    }
  return f;
}

cv::Mat Decode(const JpegImage& j) { return cv::imdecode(j.bytes, cv::IMREAD_COLOR); }

TEST(Snapshot, ScalesTo480WideKeepingAspectAndColour) {
  auto j = EncodeThumbnail(*TwoColours(1280, 720), kSnapshotMaxWidth);
  ASSERT_TRUE(j.ok()) << j.error();
  EXPECT_EQ(j->width, 480);
  EXPECT_EQ(j->height, 270);
  const cv::Mat m = Decode(*j);
  ASSERT_EQ(m.cols, 480);
  ASSERT_EQ(m.rows, 270);
  const cv::Vec3b left = m.at<cv::Vec3b>(135, 100), right = m.at<cv::Vec3b>(135, 380);  // BGR
  EXPECT_GT(left[2], 200);  // red
  EXPECT_LT(left[0], 60);
  EXPECT_GT(right[0], 200);  // blue
  EXPECT_LT(right[2], 60);
}

TEST(Snapshot, NeverEnlargesAndKeepsEvenSizes) {
  auto small = EncodeThumbnail(*TwoColours(320, 180), kSnapshotMaxWidth);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->width, 320);
  EXPECT_EQ(small->height, 180);
  auto odd = EncodeThumbnail(*TwoColours(1279, 719), 200);
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->width, 200);
  EXPECT_EQ(odd->height % 2, 0);
  EXPECT_NEAR(odd->height, 200.0 * 719 / 1279, 2);
  EXPECT_EQ(Decode(*odd).cols, 200);
  auto portrait = EncodeThumbnail(*TwoColours(720, 1280), kSnapshotMaxWidth);
  ASSERT_TRUE(portrait.ok());
  EXPECT_EQ(portrait->width, 480);
  EXPECT_EQ(portrait->height, 852);  // 853.3 rounded, made even
}

TEST(Snapshot, RefusesNoPictureAndAbsurdWidths) {
  Frame empty;
  EXPECT_FALSE(EncodeThumbnail(empty, 480).ok());
  EXPECT_FALSE(EncodeThumbnail(*TwoColours(64, 64), 1).ok());
}

}  // namespace
}  // namespace veil
