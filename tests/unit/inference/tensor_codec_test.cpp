// Detection tensors on the wire: both input forms survive packing and
// unpacking bit for bit, outputs round-trip, and malformed tensors or
// metadata are errors with a reason.
#include "inference/tensor_codec.h"

#include <gtest/gtest.h>

#include <future>

#include "fake_detector.h"
#include "inference/scheduler.h"
#include "vision/yunet.h"

namespace veil::kserve {
namespace {

cv::Mat Noise(int w, int h, int seed) {
  cv::Mat m(h, w, CV_8UC3);
  cv::RNG rng(seed);
  rng.fill(m, cv::RNG::UNIFORM, 0, 256);
  return m;
}

RemoteModel Remote(const std::string& name) {
  inference::ModelMetadataResponse md;
  FillMetadata(*FindWorkerModel(name), &md);
  auto m = ParseMetadata(md);
  EXPECT_TRUE(m.ok()) << m.error();
  return m.ok() ? *m : RemoteModel{};
}

TEST(TensorCodec, Uint8ImagesArriveBitForBit) {
  const RemoteModel m = Remote("yunet_u8");
  EXPECT_EQ(m.io.form, InputForm::kUint8Nhwc);
  EXPECT_EQ(m.fixed_batch, 0);
  const std::vector<cv::Mat> ims = {Noise(70, 38, 1), Noise(70, 38, 2)};
  inference::ModelInferRequest req;
  ASSERT_TRUE(PackImages(ims, m, &req).ok());
  EXPECT_EQ(req.raw_input_contents(0).size(), size_t(2 * 70 * 38 * 3));
  EXPECT_EQ(req.outputs_size(), kYuNetDecodeOutputs);
  auto back = UnpackImages(req, *FindWorkerModel("yunet_u8"));
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back->size(), 2u);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(cv::norm((*back)[size_t(i)], ims[size_t(i)], cv::NORM_INF), 0) << i;
}

TEST(TensorCodec, Fp32ImagesArrivePaddedToTheModelsGrid) {
  const RemoteModel m = Remote("yunet");
  EXPECT_EQ(m.io.form, InputForm::kFp32Nchw);
  const cv::Mat im = Noise(70, 38, 3);
  inference::ModelInferRequest req;
  ASSERT_TRUE(PackImages({im}, m, &req).ok());
  const auto& shape = req.inputs(0).shape();
  EXPECT_EQ(shape[1], 3);
  EXPECT_EQ(shape[2], 64);
  EXPECT_EQ(shape[3], 96);
  auto back = UnpackImages(req, *FindWorkerModel("yunet"));
  ASSERT_TRUE(back.ok()) << back.error();
  const cv::Mat& f = back->front();
  ASSERT_EQ(f.type(), CV_32FC3);
  cv::Mat top;
  f(cv::Rect(0, 0, 70, 38)).convertTo(top, CV_8UC3);
  EXPECT_EQ(cv::norm(top, im, cv::NORM_INF), 0);
  EXPECT_EQ(cv::norm(f(cv::Rect(70, 0, 26, 64)), cv::NORM_INF), 0) << "padding is zeros";
}

TEST(TensorCodec, OutputsRoundTripAndBadAnswersAreErrors) {
  const cv::Size padded(64, 64);
  std::vector<std::vector<cv::Mat>> per_image(2);
  for (int b = 0; b < 2; ++b)
    for (int k = 0; k < 12; ++k) {
      const int sz[3] = {1, YuNetAnchors(k, padded), YuNetColumns(k)};
      cv::Mat o(3, sz, CV_32F);
      cv::RNG(b * 100 + k).fill(o, cv::RNG::UNIFORM, -1.f, 1.f);
      per_image[size_t(b)].push_back(o);
    }
  inference::ModelInferRequest req;
  for (int k = 0; k < kYuNetDecodeOutputs; ++k)
    req.add_outputs()->set_name(YuNetOutputNames()[size_t(k)]);
  auto which = RequestedOutputs(req);
  ASSERT_TRUE(which.ok());
  inference::ModelInferResponse resp;
  ASSERT_TRUE(PackOutputs(per_image, *which, &resp).ok());
  auto outs = UnpackOutputs(resp, 2, padded);
  ASSERT_TRUE(outs.ok()) << outs.error();
  for (int k = 0; k < kYuNetDecodeOutputs; ++k)
    for (int b = 0; b < 2; ++b) {
      const cv::Mat& got = (*outs)[size_t(k)];
      const size_t n = per_image[0][size_t(k)].total();
      EXPECT_TRUE(std::equal(got.ptr<float>() + b * n, got.ptr<float>() + (b + 1) * n,
                             per_image[size_t(b)][size_t(k)].ptr<float>()))
          << k << "/" << b;
    }
  // Wrong batch, wrong geometry, short bytes, a missing output, a typo'd name: errors, not crashes.
  EXPECT_FALSE(UnpackOutputs(resp, 3, padded).ok());
  EXPECT_FALSE(UnpackOutputs(resp, 2, cv::Size(96, 64)).ok());
  auto shortened = resp;
  shortened.mutable_raw_output_contents(4)->resize(10);
  EXPECT_FALSE(UnpackOutputs(shortened, 2, padded).ok());
  auto missing = resp;
  missing.mutable_outputs()->RemoveLast();
  missing.mutable_raw_output_contents()->RemoveLast();
  EXPECT_FALSE(UnpackOutputs(missing, 2, padded).ok());
  auto mismatched = resp;
  mismatched.mutable_raw_output_contents()->RemoveLast();
  EXPECT_FALSE(UnpackOutputs(mismatched, 2, padded).ok());
  auto huge = resp;
  huge.mutable_outputs(0)->set_shape(1, int64_t(1) << 40);
  EXPECT_FALSE(UnpackOutputs(huge, 2, padded).ok());
  // Found by fuzz_tensor: the product of two 2^40 sides overflowed int64 (UB) while checking it.
  auto overflow = resp;
  overflow.mutable_outputs(0)->set_shape(1, int64_t(1) << 40);
  overflow.mutable_outputs(0)->add_shape(int64_t(1) << 40);
  EXPECT_FALSE(UnpackOutputs(overflow, 2, padded).ok());
  inference::ModelInferRequest bad;
  bad.add_outputs()->set_name("landmarks");
  EXPECT_FALSE(RequestedOutputs(bad).ok());
}

TEST(TensorCodec, MetadataOfTritonStyleAndForeignModels) {
  inference::ModelMetadataResponse md;
  md.set_name("face_detection_yunet");
  auto* in = md.add_inputs();
  in->set_name("input");
  in->set_datatype("FP32");
  for (int64_t d : {1, 3, 640, 640}) in->add_shape(d);
  for (const auto& n : YuNetOutputNames()) {
    auto* o = md.add_outputs();
    o->set_name(n);
    o->set_datatype("FP32");
  }
  auto m = ParseMetadata(md);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->fixed_batch, 1);
  EXPECT_EQ(m->fixed_size, cv::Size(640, 640));
  inference::ModelInferRequest req;
  ASSERT_TRUE(PackImages({Noise(640, 360, 4)}, *m, &req).ok());
  EXPECT_EQ(req.inputs(0).shape(2), 640) << "letterboxed into the fixed input";
  req.Clear();
  EXPECT_FALSE(PackImages({Noise(1280, 720, 5)}, *m, &req).ok()) << "larger than the fixed input";

  auto wrong_type = md;
  wrong_type.mutable_inputs(0)->set_datatype("INT8");
  EXPECT_FALSE(ParseMetadata(wrong_type).ok());
  auto no_cls = md;
  no_cls.mutable_outputs()->DeleteSubrange(0, 1);
  EXPECT_FALSE(ParseMetadata(no_cls).ok());
  auto two_inputs = md;
  two_inputs.add_inputs()->CopyFrom(md.inputs(0));
  EXPECT_FALSE(ParseMetadata(two_inputs).ok());
  auto odd = md;
  odd.mutable_inputs(0)->set_shape(2, 100);
  EXPECT_FALSE(ParseMetadata(odd).ok());
}

// The worker's scheduler answers raw requests with the network's outputs and
// never mixes them into a batch of decoded ones.
TEST(TensorCodec, SchedulerServesRawOutputsInTheirOwnBatches) {
  auto fake = std::make_unique<test::FakeDetector>();
  test::FakeDetector* det = fake.get();
  det->Close();
  SchedulerConfig c;
  c.max_batch = 8;
  auto s = InferenceScheduler::Create(
      c,
      [&]() -> Result<std::unique_ptr<Detector>> {
        return std::unique_ptr<Detector>(std::move(fake));
      },
      nullptr, "t");
  ASSERT_TRUE(s.ok());
  std::vector<std::future<DetectResult>> futs;
  for (int i = 0; i < 5; ++i) {
    auto p = std::make_shared<std::promise<DetectResult>>();
    futs.push_back(p->get_future());
    DetectRequest q;
    q.session = uint64_t(i + 1);
    q.raw = i % 2 == 0;
    q.image = cv::Mat(8, 8, CV_8UC3, cv::Scalar(10 + i, 0, 0));
    q.done = [p](DetectResult&& r) { p->set_value(std::move(r)); };
    (*s)->Submit(std::move(q));
  }
  det->Open();
  for (int i = 0; i < 5; ++i) {
    DetectResult r = futs[size_t(i)].get();
    ASSERT_EQ(r.outcome, DetectOutcome::kOk) << i;
    if (i % 2 == 0) {
      ASSERT_EQ(r.outputs.size(), 1u);
      EXPECT_EQ(r.outputs[0].at<float>(0, 0), 10 + i);
      EXPECT_TRUE(r.detections.empty());
    } else {
      EXPECT_TRUE(r.outputs.empty());
      ASSERT_EQ(r.detections.size(), 1u);
      EXPECT_EQ(r.detections[0].box.x, 10 + i);
    }
  }
  std::lock_guard lk(det->mu);
  for (int b : det->batches)
    EXPECT_TRUE(b == 3 || b == -3 || b == 2 || b == -2 || b == 1 || b == -1) << b;
}

}  // namespace
}  // namespace veil::kserve
