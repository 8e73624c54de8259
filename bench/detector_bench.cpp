// Detector pre-processing, forward and post-processing, measured apart.
#include <benchmark/benchmark.h>

#include <random>

#include "bench_util.h"

#include "vision/detector.h"
#include "vision/model_registry.h"
#include "vision/preprocess.h"
#include "vision/yunet.h"

#include <opencv2/dnn.hpp>

namespace veil {
namespace {
using bench::NoiseFrame;

// I420 720p -> BGR at the detection size (the privacy stage's pre-processing).
void BM_DownscaleToBgr(benchmark::State& st) {
  auto f = NoiseFrame();
  cv::Mat bgr;
  const cv::Size s(int(st.range(0)), int(st.range(1)));
  for (auto _ : st) DownscaleToBgr(*f, s, bgr);
}
BENCHMARK(BM_DownscaleToBgr)->Args({320, 180})->Args({512, 288})->Args({640, 360})->Unit(benchmark::kMicrosecond);

void BM_YuNetBlob(benchmark::State& st) {
  auto f = NoiseFrame();
  cv::Mat bgr;
  DownscaleToBgr(*f, {640, 360}, bgr);
  cv::Mat blob;
  for (auto _ : st) YuNetBlob({bgr}, YuNetPaddedSize(bgr.size()), blob);
}
BENCHMARK(BM_YuNetBlob)->Unit(benchmark::kMicrosecond);

// OpenCV's own blobFromImage on the same input, for comparison in one run.
void BM_OpenCvBlobFromImage(benchmark::State& st) {
  auto f = NoiseFrame();
  cv::Mat bgr, padded;
  DownscaleToBgr(*f, {640, 360}, bgr);
  cv::copyMakeBorder(bgr, padded, 0, 24, 0, 0, cv::BORDER_CONSTANT, cv::Scalar::all(0));
  for (auto _ : st) benchmark::DoNotOptimize(cv::dnn::blobFromImage(padded));
}
BENCHMARK(BM_OpenCvBlobFromImage)->Unit(benchmark::kMicrosecond);

// Decode of the 12 outputs: synthetic outputs with a few hundred anchors above threshold.
void BM_YuNetDecode(benchmark::State& st) {
  const cv::Size padded(640, 384);
  std::vector<cv::Mat> outs;
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(0, 1);
  for (int kind = 0; kind < 4; ++kind) {
    const int ch = kind < 2 ? 1 : kind == 2 ? 4 : 10;
    for (int s : {8, 16, 32}) {
      int sz[3] = {1, (padded.width / s) * (padded.height / s), ch};
      cv::Mat m(3, sz, CV_32F);
      float* p = m.ptr<float>();
      for (size_t i = 0; i < m.total(); ++i) p[i] = kind < 2 ? std::pow(u(rng), 8.f) : u(rng) - 0.5f;
      outs.push_back(m);
    }
  }
  for (auto _ : st) benchmark::DoNotOptimize(YuNetDecode(outs, 0, padded, {640, 360}, 0.3f, 0.3f));
}
BENCHMARK(BM_YuNetDecode)->Unit(benchmark::kMicrosecond);

// Forward + decode of the real model (needs the model; skipped with a message otherwise).
// Args: width, height, batch, forward pass (0 = OpenCV DNN, 1 = veil's native engine).
void BM_YuNetDetect(benchmark::State& st) {
  DetectorConfig c;
  c.engine = st.range(3) ? "native" : "opencv";
  auto d = LoadDetector(c);
  if (!d.ok()) {
    st.SkipWithError(d.error().c_str());
    return;
  }
  auto f = NoiseFrame();
  cv::Mat bgr;
  DownscaleToBgr(*f, {int(st.range(0)), int(st.range(1))}, bgr);
  const int batch = int(st.range(2));
  std::vector<cv::Mat> imgs(batch, bgr);
  for (auto _ : st) benchmark::DoNotOptimize((*d)->Detect(imgs, 0.3f));
  st.counters["ms_per_frame"] =
      benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_YuNetDetect)
    ->Args({320, 180, 1, 0})->Args({320, 180, 1, 1})
    ->Args({640, 352, 1, 0})->Args({640, 352, 1, 1})
    ->Args({640, 360, 1, 0})->Args({640, 360, 1, 1})
    ->Args({640, 360, 4, 0})->Args({640, 360, 4, 1})
    ->Unit(benchmark::kMillisecond);

// Batches of varying size, as a scheduler forms them (3, 4, 2, 4, 1 ...):
// arg 0 = one network for every shape (OpenCV re-plans it at each change),
// arg 1 = one network per shape (what LoadDetector builds for the OpenCV forward pass). Same
// frames, one run.
void BM_YuNetMixedBatches(benchmark::State& st) {
  auto model = ResolveModel("yunet", "", "");
  if (!model.ok()) {
    st.SkipWithError(model.error().c_str());
    return;
  }
  std::unique_ptr<Detector> d;
  if (st.range(0) == 1) {
    DetectorConfig c;
    c.engine = "opencv";
    auto l = LoadDetector(c);
    if (!l.ok()) {
      st.SkipWithError(l.error().c_str());
      return;
    }
    d = std::move(*l);
  } else {
    cv::dnn::Net net = cv::dnn::readNetFromONNX(reinterpret_cast<const char*>(model->bytes.data()), model->bytes.size());
    d = std::make_unique<YuNetDetector>(std::move(net), 0.3f);
  }
  auto f = NoiseFrame();
  cv::Mat bgr;
  DownscaleToBgr(*f, {640, 360}, bgr);
  const int sizes[] = {3, 4, 2, 4, 1, 4, 3};
  for (int n : sizes) d->Detect(std::vector<cv::Mat>(size_t(n), bgr), 0.3f);  // warm-up: every shape seen once
  int frames = 0;
  for (auto _ : st)
    for (int n : sizes) {
      benchmark::DoNotOptimize(d->Detect(std::vector<cv::Mat>(size_t(n), bgr), 0.3f));
      frames += n;
    }
  st.counters["s_per_frame"] = benchmark::Counter(double(frames), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_YuNetMixedBatches)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
}  // namespace veil
