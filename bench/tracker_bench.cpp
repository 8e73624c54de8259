#include <benchmark/benchmark.h>

#include "vision/tracker.h"

namespace veil {
namespace {

// One frame's Predict + Update with N faces moving, after a warm-up.
void BM_TrackerUpdate(benchmark::State& st) {
  const int n = int(st.range(0));
  Tracker t;
  Detections d(n);
  int frame = 0;
  auto step = [&] {
    for (int i = 0; i < n; ++i)
      d[i] = {{float(50 + (i % 5) * 240 + frame * 1.5f), float(40 + (i / 5) * 170 + frame * 0.5f), 60, 70}, 0.9f};
    t.Predict();
    t.Update(d);
    ++frame;
  };
  for (int i = 0; i < 10; ++i) step();
  for (auto _ : st) {
    step();
    benchmark::DoNotOptimize(t.tracks().data());
    if (frame > 200) frame = 10;  // stay in frame
  }
}
BENCHMARK(BM_TrackerUpdate)->Arg(5)->Arg(20)->Unit(benchmark::kMicrosecond);

void BM_TrackerMasks20(benchmark::State& st) {
  Tracker t;
  Detections d;
  for (int i = 0; i < 20; ++i) d.push_back({{float(50 + (i % 5) * 240), float(40 + (i / 5) * 170), 60, 70}, 0.9f});
  t.Predict();
  t.Update(d);
  for (auto _ : st) benchmark::DoNotOptimize(t.Masks(1280, 720));
}
BENCHMARK(BM_TrackerMasks20)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace veil
