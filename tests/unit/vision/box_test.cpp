#include "vision/box.h"
#include "vision/preprocess.h"

#include <gtest/gtest.h>

namespace veil {
namespace {

TEST(Box, IoU) {
  EXPECT_FLOAT_EQ(IoU({0, 0, 10, 10}, {0, 0, 10, 10}), 1.f);
  EXPECT_FLOAT_EQ(IoU({0, 0, 10, 10}, {5, 0, 10, 10}), 50.f / 150.f);
  EXPECT_FLOAT_EQ(IoU({0, 0, 10, 10}, {20, 20, 5, 5}), 0.f);
  EXPECT_FLOAT_EQ(IoU({0, 0, 0, 0}, {0, 0, 0, 0}), 0.f);
}

TEST(Box, NmsKeepsBestOfEachCluster) {
  Detections d = {{{0, 0, 10, 10}, 0.6f}, {{1, 1, 10, 10}, 0.9f}, {{50, 50, 10, 10}, 0.7f}};
  Detections k = Nms(d, 0.3f);
  ASSERT_EQ(k.size(), 2u);
  EXPECT_FLOAT_EQ(k[0].score, 0.9f);
  EXPECT_FLOAT_EQ(k[1].score, 0.7f);
}

TEST(Preprocess, FitSizeKeepsAspectAndEvenness) {
  EXPECT_EQ(FitSize(1280, 720, {640, 360}), cv::Size(640, 360));
  EXPECT_EQ(FitSize(1280, 720, {640, 640}), cv::Size(640, 360));
  EXPECT_EQ(FitSize(640, 480, {640, 360}), cv::Size(480, 360));
  EXPECT_EQ(FitSize(320, 180, {640, 360}), cv::Size(320, 180));  // never upscales
  EXPECT_EQ(FitSize(1279, 719, {321, 181}).width % 2, 0);
}

TEST(Preprocess, DownscaleKeepsColour) {
  auto f = MakeFrame(128, 72);
  for (const Plane* p : {&f->y, &f->u, &f->v})
    for (int y = 0; y < p->height; ++y) std::fill(p->row(y), p->row(y) + p->width, 128);
  for (int y = 0; y < 72; ++y) std::fill(f->y.row(y), f->y.row(y) + 128, 200);
  cv::Mat bgr;
  DownscaleToBgr(*f, {64, 36}, bgr);
  ASSERT_EQ(bgr.size(), cv::Size(64, 36));
  const cv::Vec3b px = bgr.at<cv::Vec3b>(10, 10);
  EXPECT_NEAR(px[0], 216, 6);  // BT.601 limited range: Y=200 grey
  EXPECT_NEAR(px[1], px[2], 2);
}

}  // namespace
}  // namespace veil
