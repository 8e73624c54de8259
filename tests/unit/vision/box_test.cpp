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

// The window YuNet is shown: the copy trimmed to whole 32-px cells where that loses at most 3%
// of a side (split between both edges, the odd row at the far one), else all of it.
TEST(Preprocess, DetectWindowTrimsToTheGridOnlyWhereLittleIsLost) {
  EXPECT_EQ(DetectWindow({640, 360}, true), cv::Rect(0, 4, 640, 352));   // 8 of 360 rows: 2.2%
  EXPECT_EQ(DetectWindow({640, 360}, false), cv::Rect(0, 0, 640, 360));  // padded instead
  EXPECT_EQ(DetectWindow({480, 360}, true), cv::Rect(0, 4, 480, 352));   // 4:3, width on the grid
  EXPECT_EQ(DetectWindow({640, 357}, true), cv::Rect(0, 2, 640, 352));   // 5 rows: 2 above, 3 below
  EXPECT_EQ(DetectWindow({650, 360}, true), cv::Rect(5, 4, 640, 352));   // both sides
  EXPECT_EQ(DetectWindow({320, 180}, true), cv::Rect(0, 0, 320, 180));   // 20 of 180 rows: 11%, padded
  EXPECT_EQ(DetectWindow({202, 360}, true), cv::Rect(0, 4, 202, 352));   // 10 of 202 columns: 5%, kept
  EXPECT_EQ(DetectWindow({20, 20}, true), cv::Rect(0, 0, 20, 20));       // under one cell
  EXPECT_EQ(DetectWindow({640, 352}, true), cv::Rect(0, 0, 640, 352));   // on the grid already
}

// Boxes come back in the copy's coordinates; one that ends on a trimmed edge, or closer to it than
// the part trimmed off there (+1), goes on to the copy's edge (what lies beyond was not shown to
// the detector); one on an untrimmed edge does not.
TEST(Preprocess, FromWindowShiftsBoxesAndExtendsThemOverTrimmedEdges) {
  const cv::Rect win(0, 4, 640, 352);
  const cv::Size copy(640, 360);
  auto same = [](const Box& a, const Box& b) {
    EXPECT_FLOAT_EQ(a.x, b.x);
    EXPECT_FLOAT_EQ(a.y, b.y);
    EXPECT_FLOAT_EQ(a.w, b.w);
    EXPECT_FLOAT_EQ(a.h, b.h);
  };
  same(FromWindow({100, 50, 20, 30}, win, copy), {100, 54, 20, 30});    // inside: shifted 4 rows down
  same(FromWindow({100, 0, 20, 10}, win, copy), {100, 0, 20, 14});      // cut at the top: from row 0
  same(FromWindow({100, 340, 20, 12}, win, copy), {100, 344, 20, 16});  // cut at the bottom: to row 360
  same(FromWindow({0, 100, 30, 30}, win, copy), {0, 104, 30, 30});      // left edge, not trimmed
  same(FromWindow({610, 100, 30, 30}, win, copy), {610, 104, 30, 30});  // right edge, not trimmed
  same(FromWindow({0, 0, 640, 352}, win, copy), {0, 0, 640, 360});      // the whole window
  same(FromWindow({5, 5, 10, 10}, win, copy), {5, 0, 10, 19});          // within 4 + 1 rows of it: from row 0
  same(FromWindow({5, 6, 10, 10}, win, copy), {5, 10, 10, 10});         // 6 rows off: not extended
  same(FromWindow({0.5f, 0, 10, 10}, {5, 0, 640, 360}, {650, 360}), {0, 0, 15.5f, 10});  // columns too
  same(FromWindow({635, 20, 5, 10}, {5, 0, 640, 360}, {650, 360}), {640, 20, 10, 10});
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
