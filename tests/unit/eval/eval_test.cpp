#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "eval/ground_truth.h"
#include "eval/motion_eval.h"
#include "eval/photo_eval.h"
#include "test_util.h"

namespace veil {
namespace {

TEST(Matching, GreedyByScoreAndPrecisionCountsAnyGtBox) {
  std::vector<GtFace> gt(2);
  gt[0].box = {0, 0, 50, 50};
  gt[1].box = {100, 0, 50, 50};
  gt[1].invalid = 1;  // still matchable (precision), never counted in recall
  Detections d = {{{2, 2, 50, 50}, 0.7f}, {{0, 0, 50, 50}, 0.9f}, {{100, 0, 50, 50}, 0.8f}, {{300, 0, 9, 9}, 0.95f}};
  int true_dets = 0;
  auto m = MatchDetections(d, gt, 0.5f, &true_dets);
  EXPECT_TRUE(m[0]);
  EXPECT_TRUE(m[1]);
  EXPECT_EQ(true_dets, 2);  // the 0.7 duplicate and the stray box are false positives
}

TEST(Coverage, UnionOfRectangles) {
  const Box face{10, 10, 20, 20};
  EXPECT_DOUBLE_EQ(CoveredFraction(face, {}), 0.0);
  EXPECT_DOUBLE_EQ(CoveredFraction(face, {Rect{0, 0, 100, 100}}), 1.0);
  EXPECT_DOUBLE_EQ(CoveredFraction(face, {Rect{10, 10, 20, 30}}), 0.5);
  EXPECT_DOUBLE_EQ(CoveredFraction(face, {Rect{10, 10, 20, 30}, Rect{15, 10, 30, 30}}), 1.0);
  EXPECT_DOUBLE_EQ(CoveredFraction(face, {Rect{500, 500, 600, 600}}), 0.0);
}

// Over-blur split by what destroyed it: each destroyed pixel goes to the first part that covers
// it, areas counted by hand.
TEST(Overblur, EachDestroyedPixelGoesToTheFirstPartCoveringIt) {
  cv::Mat destroyed(100, 200, CV_8U, cv::Scalar(255));
  destroyed(cv::Rect(150, 0, 50, 100)).setTo(0);  // the right quarter is intact: counted nowhere
  const std::vector<cv::Rect2d> faces = {{20, 20, 20, 20}};  // grown by 50%: x and y in [10, 50]
  FrameReport rep;
  // On the face: core 20x20 in grown 30x30 in a 40x40 rect.
  rep.rects.push_back(Rect{10, 10, 50, 50});
  rep.origins.push_back({Rect{20, 20, 40, 40}, Rect{15, 15, 45, 45}, /*matched=*/true, /*confirmed=*/true});
  // A coasting stray (centre x 55, off the face) overlapping the face's rect: the overlap is the face's.
  rep.rects.push_back(Rect{40, 20, 70, 40});
  rep.origins.push_back({Rect{40, 20, 70, 40}, Rect{40, 20, 70, 40}, false, true});
  // A lone low-score stray reaching past the frame's right edge (clipped), mostly in the intact quarter,
  rep.rects.push_back(Rect{140, 60, 260, 80});
  rep.origins.push_back({Rect{140, 60, 260, 80}, Rect{140, 60, 260, 80}, true, false});
  // ...under a matched stray that overlaps it by x 140..145: the matched one comes first.
  rep.rects.push_back(Rect{100, 60, 145, 80});
  rep.origins.push_back({Rect{100, 60, 145, 80}, Rect{100, 60, 145, 80}, true, true});
  const auto n = SplitOverblur(destroyed, rep, faces);
  EXPECT_EQ(n[size_t(OverblurPart::kFaceBox)], 20 * 20);
  EXPECT_EQ(n[size_t(OverblurPart::kFaceGrowth)], 30 * 30 - 20 * 20);
  EXPECT_EQ(n[size_t(OverblurPart::kFaceMargin)], 40 * 40 - 30 * 30);
  EXPECT_EQ(n[size_t(OverblurPart::kStrayCoasting)], 30 * 20 - 10 * 20);  // less x 40..50, the face's rect
  EXPECT_EQ(n[size_t(OverblurPart::kStrayMatched)], 45 * 20);
  EXPECT_EQ(n[size_t(OverblurPart::kStrayUnconfirmed)], 5 * 20);  // x 145..150: the rest is intact or matched
  EXPECT_EQ(n[size_t(OverblurPart::kWholeFrame)], 0);
  int64_t total = 0;
  for (int64_t v : n) total += v;
  EXPECT_EQ(total, 150 * 100) << "every destroyed pixel is counted once";
  EXPECT_EQ(n[size_t(OverblurPart::kOutsideMasks)], 150 * 100 - 3000);

  // Without the annotated face, its mask is a stray one the newest detection matched.
  const auto none = SplitOverblur(destroyed, rep, {});
  EXPECT_EQ(none[size_t(OverblurPart::kFaceBox)] + none[size_t(OverblurPart::kFaceGrowth)] +
                none[size_t(OverblurPart::kFaceMargin)],
            0);
  EXPECT_EQ(none[size_t(OverblurPart::kStrayMatched)], 40 * 40 + 45 * 20);
  EXPECT_EQ(none[size_t(OverblurPart::kStrayCoasting)], 30 * 20 - 10 * 20);

  FrameReport closed;  // fail-closed: one whole-frame rect, no face masks
  closed.fail_closed = true;
  closed.rects.push_back(Rect{0, 0, 200, 100});
  const auto c = SplitOverblur(destroyed, closed, faces);
  EXPECT_EQ(c[size_t(OverblurPart::kWholeFrame)], 150 * 100);
  EXPECT_EQ(c[size_t(OverblurPart::kOutsideMasks)], 0);
}

TEST(Motion, FacesMoveAboutOneAndAHalfPixelsPerFrame) {
  // Mean displacement of points spread over the photo, over several shots.
  const cv::Size photo(1024, 768), canvas(1280, 720);
  double total = 0;
  int n = 0;
  for (int k = 0; k < 8; ++k)
    for (int t = 1; t < 30; ++t) {
      const Motion a = MotionAt(k, t - 1, 30, photo, canvas), b = MotionAt(k, t, 30, photo, canvas);
      for (double x = 100; x < 1000; x += 200)
        for (double y = 100; y < 700; y += 200, ++n)
          total += std::hypot((b.s * x + b.tx) - (a.s * x + a.tx), (b.s * y + b.ty) - (a.s * y + a.ty));
    }
  const double per_frame = total / n;
  EXPECT_GT(per_frame, 1.0);
  EXPECT_LT(per_frame, 3.0);
}

TEST(GroundTruth, MalformedCsvIsAClearError) {
  const std::string dir = test::TempPath("gt");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/ground_truth.csv") << "image,x,y,w,h,blur,expression,illumination,invalid,occlusion,pose\n"
                                           << "a.jpg,1,2,abc,4,0,0,0,0,0,0\n";
  auto r = LoadGroundTruth(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(":2:"), std::string::npos) << r.error();
  std::ofstream(dir + "/ground_truth.csv") << "wrong header\n";
  EXPECT_FALSE(LoadGroundTruth(dir).ok());
  std::ofstream(dir + "/ground_truth.csv") << "image,x,y,w,h,blur,expression,illumination,invalid,occlusion,pose\n"
                                           << "../../etc/passwd,1,2,3,4,0,0,0,0,0,0\n";
  EXPECT_FALSE(LoadGroundTruth(dir).ok());
  EXPECT_FALSE(LoadGroundTruth(dir + "/missing").ok());
  std::filesystem::remove_all(dir);
}

TEST(GroundTruth, DegenerateBoxesAreSkippedAndCounted) {
  // The official WIDER val files hold a few boxes of width or height 0.
  const std::string dir = test::TempPath("gt_degenerate");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/ground_truth.csv") << "image,x,y,w,h,blur,expression,illumination,invalid,occlusion,pose\n"
                                           << "a.jpg,10,20,0,40,0,0,0,0,0,0\n"
                                           << "a.jpg,10,20,30,40,0,0,0,0,0,0\n"
                                           << "b.jpg,5,5,12,-3,0,0,0,0,0,0\n"
                                           << "c.jpg,1,1,50,50,0,0,0,0,0,0\n";
  int skipped = -1;
  auto r = LoadGroundTruth(dir, &skipped);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(skipped, 2);
  ASSERT_EQ(r->size(), 3u);  // b.jpg stays, with no face: its detections are false positives
  EXPECT_EQ((*r)[0].faces.size(), 1u);
  EXPECT_FLOAT_EQ((*r)[0].faces[0].box.w, 30.f);
  EXPECT_TRUE((*r)[1].faces.empty());
  std::ofstream(dir + "/ground_truth.csv") << "image,x,y,w,h,blur,expression,illumination,invalid,occlusion,pose\n"
                                           << "a.jpg,10,20,0,0,0,0,0,0,0,0\n";
  EXPECT_FALSE(LoadGroundTruth(dir).ok()) << "a file with no usable box is still an error";
  std::filesystem::remove_all(dir);
}

TEST(GroundTruth, ReadsTheSharedAnnotations) {
  auto r = LoadGroundTruth(test::Assets() + "/faces");
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->size(), 183u);
  size_t faces = 0, ge40 = 0;
  for (const auto& im : *r)
    for (const auto& f : im.faces) {
      ++faces;
      ge40 += f.valid() && f.min_side() >= 40;
    }
  EXPECT_EQ(faces, 1180u);
  EXPECT_EQ(ge40, 314u);
}

}  // namespace
}  // namespace veil
