#include "core/frame.h"

#include <gtest/gtest.h>

namespace veil {
namespace {

TEST(FramePool, OddSizesGetCeilChroma) {
  auto f = MakeFrame(33, 17);
  EXPECT_EQ(f->y.width, 33);
  EXPECT_EQ(f->u.width, 17);
  EXPECT_EQ(f->u.height, 9);
  EXPECT_GE(f->y.stride, 33);
  EXPECT_EQ(f->y.stride % 32, 0);
}

TEST(FramePool, ReusesReleasedFramesWithoutNewAllocations) {
  auto pool = FramePool::Create(64, 48, 4);
  const uint8_t* first = nullptr;
  for (int i = 0; i < 100; ++i) {
    FramePtr a = pool->Acquire();
    FramePtr b = pool->Acquire();
    if (!first) first = a->y.data;
    a->y.data[0] = uint8_t(i);
  }
  EXPECT_EQ(pool->allocations(), 2u);  // two in flight at most, then recycled
  FramePtr again = pool->Acquire();
  EXPECT_EQ(again->y.data, first);  // the most recently released buffer comes back first
}

TEST(FramePool, FramesOutliveThePoolHandle) {
  FramePtr f;
  {
    auto pool = FramePool::Create(16, 16);
    f = pool->Acquire();
  }
  f->y.data[0] = 1;  // pool kept alive by the frame's deleter
  f.reset();
  SUCCEED();
}

TEST(FramePool, RejectsAbsurdSizes) {
  EXPECT_THROW(MakeFrame(0, 10), std::invalid_argument);
  EXPECT_THROW(MakeFrame(100000, 10), std::invalid_argument);
}

TEST(Frame, CopyCopiesPixelsAndTimestamps) {
  auto a = MakeFrame(10, 6), b = MakeFrame(10, 6);
  for (int y = 0; y < 6; ++y)
    for (int x = 0; x < 10; ++x) a->y.row(y)[x] = uint8_t(x + y * 10);
  a->pts = 42;
  CopyFrame(*a, *b);
  EXPECT_EQ(b->y.row(5)[9], 59);
  EXPECT_EQ(b->pts, 42);
  auto c = MakeFrame(12, 6);
  EXPECT_THROW(CopyFrame(*a, *c), std::invalid_argument);
}

// The scene-cut measure: each cell is its own region's mean, whatever the frame's size, so a
// picture of flat 40x40 tiles reads back tile for tile, and a brightness step of 10 reads 10.
TEST(LumaThumb, CellsAreTheirRegionsMeans) {
  for (auto [w, h] : {std::pair{1280, 720}, std::pair{640, 360}}) {
    FramePtr f = MakeFrame(w, h);
    const int cw = w / LumaThumb::kW, ch = h / LumaThumb::kH;
    auto tile = [](int bx, int by) { return uint8_t((bx * 7 + by * 13) % 200 + 20); };
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) f->y.row(y)[x] = tile(x / cw, y / ch);
    const LumaThumb t = LumaThumb::Of(*f);
    for (int by = 0; by < LumaThumb::kH; ++by)
      for (int bx = 0; bx < LumaThumb::kW; ++bx) ASSERT_EQ(t.v[size_t(by * LumaThumb::kW + bx)], tile(bx, by)) << w;
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) f->y.row(y)[x] = uint8_t(f->y.row(y)[x] + 10);
    EXPECT_DOUBLE_EQ(LumaThumb::Of(*f).MeanAbsDiff(t), 10.0);
    EXPECT_DOUBLE_EQ(t.MeanAbsDiff(t), 0.0);
  }
}

}  // namespace
}  // namespace veil
