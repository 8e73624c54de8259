// veil's own YuNet forward pass (vision/yunet_engine.h) against OpenCV DNN's forward pass of the
// same model file: the oracle is OpenCV, not the engine.
#include "vision/yunet_engine.h"

#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "eval/ground_truth.h"
#include "test_util.h"
#include "vision/detector.h"
#include "vision/model_registry.h"
#include "vision/yunet.h"

namespace veil {
namespace {

cv::dnn::Net ReadNet(const std::string& family) {
  auto m = ResolveModel(family, "", "");
  EXPECT_TRUE(m.ok()) << m.error();
  cv::dnn::Net n =
      cv::dnn::readNetFromONNX(reinterpret_cast<const char*>(m->bytes.data()), m->bytes.size());
  n.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  n.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  return n;
}

// Annotated photos as the privacy stage shows them: scaled to 640 wide (a 16:9 one to 640x360)
// or to sizes off YuNet's 32-px grid, so the padding is exercised.
std::vector<cv::Mat> Photos(int count) {
  auto gt = LoadGroundTruth(test::Assets() + "/faces");
  EXPECT_TRUE(gt.ok()) << gt.error();
  std::vector<cv::Mat> out;
  const cv::Size sizes[] = {{640, 360}, {640, 480}, {333, 250}, {96, 70}};
  for (const auto& im : *gt) {
    cv::Mat img = cv::imread(im.path), r;
    if (img.empty()) continue;
    cv::resize(img, r, sizes[out.size() % 4], 0, 0, cv::INTER_AREA);
    out.push_back(r);
    if (int(out.size()) == count) break;
  }
  return out;
}

std::vector<cv::Mat> OpenCvOutputs(cv::dnn::Net& net, const cv::Mat& img, cv::Size padded) {
  cv::Mat blob;
  YuNetBlob({img}, padded, blob);
  net.setInput(blob);
  std::vector<cv::Mat> outs;
  net.forward(outs, YuNetOutputNames());
  return outs;
}

std::vector<cv::Mat> EngineOutputs(YuNetEngine& e, const cv::Mat& img, cv::Size padded) {
  std::vector<cv::Mat> outs(12);
  for (int k = 0; k < 12; ++k) {
    const int sz[3] = {1, YuNetAnchors(k, padded), YuNetColumns(k)};
    outs[k].create(3, sz, CV_32F);
  }
  Status s = e.Run(img, padded, outs, 0);
  EXPECT_TRUE(s.ok()) << s.message();
  return outs;
}

void ExpectSameAsOpenCv(const YuNetKernels& kernels) {
  cv::dnn::Net reference = ReadNet("yunet");
  cv::dnn::Net source = ReadNet("yunet");
  auto engine = YuNetEngine::Create(source, kernels);
  ASSERT_TRUE(engine.ok()) << engine.error();
  EXPECT_STREQ((*engine)->isa(), kernels.isa);
  int faces = 0;
  double worst = 0;
  for (const cv::Mat& img : Photos(12)) {
    const cv::Size padded = YuNetPaddedSize(img.size());
    auto want = OpenCvOutputs(reference, img, padded);
    auto got = EngineOutputs(**engine, img, padded);
    ASSERT_EQ(want.size(), 12u);
    for (int k = 0; k < 12; ++k) {
      ASSERT_EQ(want[k].total(), got[k].total()) << YuNetOutputNames()[k];
      const double d = cv::norm(want[k].reshape(1, 1), got[k].reshape(1, 1), cv::NORM_INF);
      worst = std::max(worst, d);
      EXPECT_LE(d, 1e-3) << YuNetOutputNames()[k] << " at " << img.cols << "x" << img.rows;
    }
    // What the privacy stage uses: the decoded boxes.
    const Detections a = YuNetDecode(want, 0, padded, img.size(), 0.3f, 0.3f);
    const Detections b = YuNetDecode(got, 0, padded, img.size(), 0.3f, 0.3f);
    ASSERT_EQ(a.size(), b.size()) << img.cols << "x" << img.rows;
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_NEAR(a[i].box.x, b[i].box.x, 0.05);
      EXPECT_NEAR(a[i].box.y, b[i].box.y, 0.05);
      EXPECT_NEAR(a[i].box.w, b[i].box.w, 0.05);
      EXPECT_NEAR(a[i].box.h, b[i].box.h, 0.05);
      EXPECT_NEAR(a[i].score, b[i].score, 1e-4);
    }
    faces += int(a.size());
  }
  EXPECT_GE(faces, 20);  // the photos have faces to compare
  std::printf("[ %s ] %d detections compared; largest output difference %.2g\n", kernels.isa, faces,
              worst);
}

TEST(YuNetEngine, GenericKernelsGiveOpenCvsOutputs) {
  ExpectSameAsOpenCv(YuNetKernelsGeneric());
}

TEST(YuNetEngine, Avx2KernelsGiveOpenCvsOutputs) {
  if (std::string(YuNetKernelsFor().isa) != "avx2") GTEST_SKIP() << "this CPU has no AVX2 + FMA";
  ExpectSameAsOpenCv(YuNetKernelsAvx2());
}

// The check on load: kernels that compute something else (here the pyramid's upsampled level
// left out) are refused, by comparison with OpenCV's outputs.
void UpAddWithoutTheSmallLevel(const float*, const float* big, int h, int w, int c, float* out) {
  std::copy(big, big + size_t(h) * w * c, out);
}

TEST(YuNetEngine, ACheckOnLoadRefusesOutputsOtherThanOpenCvs) {
  YuNetKernels broken = YuNetKernelsGeneric();
  broken.up_add = UpAddWithoutTheSmallLevel;
  cv::dnn::Net net = ReadNet("yunet");
  auto e = YuNetEngine::Create(net, broken);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("differs from OpenCV's"), std::string::npos) << e.error();
}

TEST(YuNetEngine, RefusesANetworkThatIsNotYuNet) {
  cv::dnn::Net net = ReadNet("ultraface");
  auto e = YuNetEngine::Create(net);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().find("yunet engine"), std::string::npos) << e.error();
}

TEST(YuNetEngine, BadInputIsAnError) {
  cv::dnn::Net net = ReadNet("yunet");
  auto e = YuNetEngine::Create(net);
  ASSERT_TRUE(e.ok()) << e.error();
  cv::Mat img(40, 40, CV_8UC3, cv::Scalar::all(9));
  std::vector<cv::Mat> outs(12);
  EXPECT_FALSE((*e)->Run(img, {64, 64}, outs, 0).ok());        // outputs not shaped
  EXPECT_FALSE((*e)->Run(img, {30, 64}, outs, 0).ok());        // off the grid
  EXPECT_FALSE((*e)->Run(img, {32, 32}, outs, 0).ok());        // image larger than padded
  EXPECT_FALSE((*e)->Run(cv::Mat(), {64, 64}, outs, 0).ok());  // empty
  EXPECT_FALSE((*e)->Run(cv::Mat(40, 40, CV_8UC1), {64, 64}, outs, 0).ok());  // not BGR
}

TEST(YuNetEngine, ConfigChoosesTheForwardPass) {
  DetectorConfig c;
  EXPECT_TRUE(Validate(c).ok());
  c.engine = "gpu";
  EXPECT_FALSE(Validate(c).ok());
  c.engine = "native";
  c.threads = 2;
  EXPECT_FALSE(Validate(c).ok());  // native is one thread
  c.threads = 1;
  c.family = "ultraface";
  EXPECT_FALSE(Validate(c).ok());  // native is YuNet's only
  c.engine = "auto";
  EXPECT_TRUE(Validate(c).ok());

  std::string native_src, opencv_src;
  DetectorConfig n;
  auto a = LoadDetector(n, &native_src);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_NE(native_src.find("forward pass: native"), std::string::npos) << native_src;
  n.engine = "opencv";
  auto b = LoadDetector(n, &opencv_src);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_NE(opencv_src.find("forward pass: OpenCV DNN"), std::string::npos) << opencv_src;
  // Both find the same faces.
  auto photos = Photos(4);
  auto da = (*a)->Detect({photos[0]}, 0.5f), db = (*b)->Detect({photos[0]}, 0.5f);
  ASSERT_TRUE(da.ok() && db.ok());
  ASSERT_EQ(da->front().size(), db->front().size());
  EXPECT_GE(da->front().size(), 1u);
}

}  // namespace
}  // namespace veil
