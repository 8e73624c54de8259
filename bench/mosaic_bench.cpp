#include <benchmark/benchmark.h>

#include <random>

#include "bench_util.h"

#include "vision/mosaic.h"

namespace veil {
namespace {
using bench::NoiseFrame;

// 720p frame with 5 faces of 80-240 px (margin included), adaptive cells.
void BM_Mosaic720p5Faces(benchmark::State& st) {
  auto f = NoiseFrame(1280, 720);
  MosaicParams p;
  const Box faces[5] = {{100, 100, 80, 100}, {300, 150, 120, 150}, {600, 80, 240, 300},
                        {900, 300, 160, 200}, {1100, 500, 100, 120}};
  for (auto _ : st) {
    for (const Box& b : faces) MosaicRect(*f, MosaicRectFor(b.Expanded(float(p.margin)), 1280, 720), CellSizeFor(b.w, p));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_Mosaic720p5Faces)->Unit(benchmark::kMicrosecond);

void BM_MosaicFullFrame720p(benchmark::State& st) {
  auto f = NoiseFrame(1280, 720);
  for (auto _ : st) {
    MosaicFullFrame(*f, 40);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_MosaicFullFrame720p)->Unit(benchmark::kMicrosecond);

// The field report's cause 1: a tiny cell costs far more for no privacy gain.
void BM_MosaicCellSize(benchmark::State& st) {
  auto f = NoiseFrame(1280, 720);
  const int cell = int(st.range(0));
  for (auto _ : st) {
    MosaicRect(*f, Rect{400, 100, 800, 600}, cell);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_MosaicCellSize)->Arg(2)->Arg(8)->Arg(32)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace veil
