#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "eval/ground_truth.h"
#include "eval/photo_eval.h"
#include "test_util.h"
#include "vision/detector.h"
#include "vision/ultraface.h"
#include "vision/yunet.h"

namespace veil {
namespace {

// Photos with clear faces of at least 60 px, letterboxed to 640x640 as the model expects.
struct Sample {
  cv::Mat input;
  double scale;
  std::vector<GtFace> faces;
};
std::vector<Sample> ClearFacePhotos(int count) {
  auto gt = LoadGroundTruth(test::Assets() + "/faces");
  EXPECT_TRUE(gt.ok()) << gt.error();
  std::vector<Sample> out;
  for (const auto& im : *gt) {
    std::vector<GtFace> big;
    for (const auto& f : im.faces)
      if (f.valid() && f.clear() && f.min_side() >= 60) big.push_back(f);
    if (big.empty()) continue;
    cv::Mat img = cv::imread(im.path);
    const double s = std::min(640.0 / img.cols, 640.0 / img.rows);
    cv::Mat r, in;
    cv::resize(img, r, cv::Size(int(img.cols * s), int(img.rows * s)));
    cv::copyMakeBorder(r, in, 0, 640 - r.rows, 0, 640 - r.cols, cv::BORDER_CONSTANT, cv::Scalar::all(0));
    out.push_back({in, s, big});
    if (int(out.size()) == count) break;
  }
  return out;
}

double RecallOnClearFaces(Detector& d, const std::vector<Sample>& samples, float score) {
  int hit = 0, total = 0;
  for (const auto& s : samples) {
    auto r = d.Detect({s.input}, score);
    EXPECT_TRUE(r.ok()) << r.error();
    Detections back;
    for (const auto& det : r->front()) back.push_back({det.box.Scaled(1 / s.scale, 1 / s.scale), det.score});
    auto matched = MatchDetections(back, s.faces, 0.5f, nullptr);
    for (bool m : matched) hit += m;
    total += int(s.faces.size());
  }
  return total ? double(hit) / total : 0;
}

TEST(YuNet, FindsClearFacesOnRealPhotos) {
  auto d = LoadDetector({});
  ASSERT_TRUE(d.ok()) << d.error();
  auto samples = ClearFacePhotos(15);
  ASSERT_GE(samples.size(), 10u);
  EXPECT_GE(RecallOnClearFaces(**d, samples, 0.6f), 0.8);
}

TEST(YuNet, BatchGivesTheSameBoxesAsSingleCalls) {
  auto d = LoadDetector({});
  ASSERT_TRUE(d.ok());
  auto samples = ClearFacePhotos(3);
  std::vector<cv::Mat> batch;
  for (auto& s : samples) batch.push_back(s.input);
  auto all = (*d)->Detect(batch, 0.5f);
  ASSERT_TRUE(all.ok()) << all.error();
  ASSERT_EQ(all->size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    auto one = (*d)->Detect({batch[i]}, 0.5f);
    ASSERT_TRUE(one.ok());
    ASSERT_EQ(one->front().size(), (*all)[i].size());
    for (size_t k = 0; k < one->front().size(); ++k)
      EXPECT_NEAR(one->front()[k].box.x, (*all)[i][k].box.x, 0.5);
  }
}

TEST(YuNet, DecodesHandMadeOutputs) {
  // One confident anchor at stride 16, row 2, col 3 of a 64x64 input.
  const cv::Size padded(64, 64);
  std::vector<cv::Mat> outs;
  const int strides[3] = {8, 16, 32};
  for (int kind = 0; kind < 4; ++kind) {
    const int ch = kind < 2 ? 1 : kind == 2 ? 4 : 10;
    for (int s : strides) {
      const int n = (64 / s) * (64 / s);
      int sz[3] = {1, n, ch};
      outs.emplace_back(3, sz, CV_32F, cv::Scalar(0));
    }
  }
  const int idx = 2 * 4 + 3;  // stride 16: 4 columns
  outs[1].ptr<float>()[idx] = 0.81f;  // cls_16
  outs[4].ptr<float>()[idx] = 1.0f;   // obj_16
  float* bb = outs[7].ptr<float>() + idx * 4;
  bb[0] = 0.5f;            // cx = (3 + 0.5) * 16 = 56
  bb[1] = 0.25f;           // cy = (2 + 0.25) * 16 = 36
  bb[2] = std::log(1.5f);  // w = 24
  bb[3] = std::log(2.0f);  // h = 32
  Detections d = YuNetDecode(outs, 0, padded, padded, 0.5f, 0.3f);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NEAR(d[0].score, 0.9f, 1e-5);  // sqrt(0.81 * 1)
  EXPECT_NEAR(d[0].box.x, 44, 1e-3);
  EXPECT_NEAR(d[0].box.y, 20, 1e-3);
  EXPECT_NEAR(d[0].box.w, 20, 1e-3);  // clipped at the 64-px image edge (44 + 24 > 64)
  EXPECT_NEAR(d[0].box.h, 32, 1e-3);
  EXPECT_TRUE(YuNetDecode(outs, 0, padded, padded, 0.95f, 0.3f).empty());
}

TEST(UltraFace, BothVariantsFindClearFaces) {
  auto samples = ClearFacePhotos(15);
  for (const char* file : {"version-RFB-320.onnx", "version-RFB-640.onnx"}) {
    DetectorConfig c;
    c.family = "ultraface";
    c.model_path = test::Models() + "/" + file;
    auto d = LoadDetector(c);
    ASSERT_TRUE(d.ok()) << d.error();
    EXPECT_GE(RecallOnClearFaces(**d, samples, 0.6f), 0.7) << file;
  }
}

TEST(UltraFace, DecodesHandMadeOutputs) {
  int ss[3] = {1, 2, 2}, bs[3] = {1, 2, 4};
  cv::Mat scores(3, ss, CV_32F), boxes(3, bs, CV_32F);
  const float sc[4] = {0.1f, 0.9f, 0.8f, 0.2f};
  const float bx[8] = {0.1f, 0.2f, 0.3f, 0.6f, 0.5f, 0.5f, 0.6f, 0.6f};
  std::memcpy(scores.ptr<float>(), sc, sizeof sc);
  std::memcpy(boxes.ptr<float>(), bx, sizeof bx);
  Detections d = UltraFaceDecode(scores, boxes, 0, cv::Size(200, 100), 0.5f, 0.3f);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NEAR(d[0].box.x, 20, 1e-3);
  EXPECT_NEAR(d[0].box.y, 20, 1e-3);
  EXPECT_NEAR(d[0].box.w, 40, 1e-3);
  EXPECT_NEAR(d[0].box.h, 40, 1e-3);
}

TEST(Detector, RejectsBadInputImages) {
  auto d = LoadDetector({});
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE((*d)->Detect({cv::Mat()}, 0.5f).ok());
  EXPECT_FALSE((*d)->Detect({cv::Mat(64, 64, CV_8UC1)}, 0.5f).ok());
  EXPECT_TRUE((*d)->Detect({}, 0.5f).ok());
}

}  // namespace
}  // namespace veil
