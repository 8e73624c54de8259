#include "vision/mosaic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace veil {
namespace {

void FillRandom(Frame& f, uint32_t seed) {
  std::mt19937 rng(seed);
  for (const Plane* p : {&f.y, &f.u, &f.v})
    for (int y = 0; y < p->height; ++y)
      for (int x = 0; x < p->width; ++x) p->row(y)[x] = uint8_t(rng());
}

// Independent reference: each pixel of [x0,x1)x[y0,y1) becomes the rounded
// mean of the cell it falls in (cells anchored at x0,y0), others stay.
void ExpectPixelated(const Plane& before, const Plane& after, int x0, int y0, int x1, int y1, int cell) {
  x1 = std::min(x1, before.width);
  y1 = std::min(y1, before.height);
  for (int y = 0; y < before.height; ++y) {
    for (int x = 0; x < before.width; ++x) {
      const uint8_t got = after.row(y)[x];
      if (x < x0 || x >= x1 || y < y0 || y >= y1) {
        ASSERT_EQ(got, before.row(y)[x]) << "outside pixel changed at " << x << "," << y;
        continue;
      }
      const int cx = x0 + (x - x0) / cell * cell, cy = y0 + (y - y0) / cell * cell;
      double sum = 0;
      int n = 0;
      for (int yy = cy; yy < std::min(cy + cell, y1); ++yy)
        for (int xx = cx; xx < std::min(cx + cell, x1); ++xx, ++n) sum += before.row(yy)[xx];
      ASSERT_EQ(got, uint8_t(std::floor(sum / n + 0.5))) << "at " << x << "," << y;
    }
  }
}

TEST(Mosaic, HandComputedTwoByTwo) {
  auto f = MakeFrame(4, 2);
  const uint8_t v[8] = {0, 1, 10, 20, 6, 7, 30, 41};
  for (int i = 0; i < 8; ++i) f->y.row(i / 4)[i % 4] = v[i];
  MosaicRect(*f, Rect{0, 0, 4, 2}, 2);
  // (0+1+6+7)/4 = 3.5 -> 4 ; (10+20+30+41)/4 = 25.25 -> 25
  EXPECT_EQ(f->y.row(0)[0], 4);
  EXPECT_EQ(f->y.row(1)[1], 4);
  EXPECT_EQ(f->y.row(0)[2], 25);
  EXPECT_EQ(f->y.row(1)[3], 25);
}

TEST(Mosaic, PixelExactOnAllPlanesWithPartialCells) {
  auto f = MakeFrame(64, 48), orig = MakeFrame(64, 48);
  FillRandom(*f, 1);
  CopyFrame(*f, *orig);
  const Rect r{6, 4, 6 + 30, 4 + 22};  // 30x22: partial cells at the right/bottom
  MosaicRect(*f, r, 8);
  ExpectPixelated(orig->y, f->y, 6, 4, 36, 26, 8);
  ExpectPixelated(orig->u, f->u, 3, 2, 18, 13, 4);
  ExpectPixelated(orig->v, f->v, 3, 2, 18, 13, 4);
}

TEST(Mosaic, OddFrameAndBoxTouchingTheBorder) {
  auto f = MakeFrame(33, 17), orig = MakeFrame(33, 17);
  FillRandom(*f, 2);
  CopyFrame(*f, *orig);
  const Rect r = MosaicRectFor(Box{20.3f, 5.5f, 40.f, 40.f}, 33, 17);  // runs off right and bottom
  EXPECT_EQ(r.x0, 20);
  EXPECT_EQ(r.y0, 4);
  EXPECT_EQ(r.x1, 33);
  EXPECT_EQ(r.y1, 17);
  MosaicRect(*f, r, 8);
  ExpectPixelated(orig->y, f->y, 20, 4, 33, 17, 8);
  ExpectPixelated(orig->u, f->u, 10, 2, 17, 9, 4);  // chroma 17x9: ceil of the odd luma edge
}

TEST(Mosaic, BoxFullyOutsideIsEmptyAndTouchesNothing) {
  EXPECT_TRUE(MosaicRectFor(Box{-50, -50, 20, 20}, 64, 48).empty());
  EXPECT_TRUE(MosaicRectFor(Box{70, 10, 20, 20}, 64, 48).empty());
  auto f = MakeFrame(64, 48), orig = MakeFrame(64, 48);
  FillRandom(*f, 3);
  CopyFrame(*f, *orig);
  MosaicRect(*f, MosaicRectFor(Box{-50, -50, 20, 20}, 64, 48), 8);
  ExpectPixelated(orig->y, f->y, 0, 0, 0, 0, 8);
}

TEST(Mosaic, FullFrame) {
  auto f = MakeFrame(50, 30), orig = MakeFrame(50, 30);
  FillRandom(*f, 4);
  CopyFrame(*f, *orig);
  MosaicFullFrame(*f, 16);
  ExpectPixelated(orig->y, f->y, 0, 0, 50, 30, 16);
  ExpectPixelated(orig->v, f->v, 0, 0, 25, 15, 8);
}

TEST(Mosaic, CellAdaptsToFaceSizeWithFloor) {
  MosaicParams p;  // 3 across, min 8
  EXPECT_EQ(CellSizeFor(20, p), 8);     // 6.7 px would be too fine: floor at 8
  EXPECT_EQ(CellSizeFor(60, p), 20);
  EXPECT_EQ(CellSizeFor(150, p), 50);
  EXPECT_EQ(CellSizeFor(63, p), 22);    // always even (chroma alignment)
  p.cells_across = 8;
  EXPECT_EQ(CellSizeFor(40, p), 8);
  EXPECT_EQ(CellSizeFor(160, p), 20);
  p.fixed_cell = 12;
  EXPECT_EQ(CellSizeFor(400, p), 12);
}

TEST(Mosaic, MaskGrowsByTheMarginOrTheDetectorPixelFloorWhicheverIsLarger) {
  MosaicParams p;
  p.margin = 0.1;
  p.margin_min = 10;  // detection-copy px; 2 frame px each (a 1280-wide frame detected at 640)
  // Small face (40x48): 0.1 * 40 = 4 px < the 20-px floor, on both axes.
  Rect r = MaskRectFor(Box{100, 100, 40, 48}, p, 2.f, 1280, 720);
  EXPECT_EQ(r.x0, 80);
  EXPECT_EQ(r.x1, 160);
  EXPECT_EQ(r.y0, 80);
  EXPECT_EQ(r.y1, 168);
  // Big face (400x500): the margin (40 / 50 px) is larger than the floor.
  r = MaskRectFor(Box{300, 100, 400, 500}, p, 2.f, 1280, 720);
  EXPECT_EQ(r.x0, 260);
  EXPECT_EQ(r.x1, 740);
  EXPECT_EQ(r.y0, 50);
  EXPECT_EQ(r.y1, 650);
  // Detected at full resolution, the floor is 10 frame px.
  r = MaskRectFor(Box{100, 100, 40, 48}, p, 1.f, 1280, 720);
  EXPECT_EQ(r.x0, 90);
  EXPECT_EQ(r.x1, 150);
  // No floor: the plain margin, as MosaicRectFor on the expanded box; clipped at the frame.
  p.margin_min = 0;
  r = MaskRectFor(Box{2, 100, 40, 48}, p, 2.f, 1280, 720);
  EXPECT_EQ(r.x0, 0);
  EXPECT_EQ(r.x1, 46);
  EXPECT_EQ(r.y0, 94);   // 100 - 4.8, down to even
  EXPECT_EQ(r.y1, 154);  // 148 + 4.8, up to even
}

TEST(Mosaic, RejectsDegenerateParameters) {
  MosaicParams p;
  EXPECT_TRUE(Validate(p).ok());
  p.min_cell = 1;  // the field report's cause 1: a 1-px "mosaic" costs time and hides nothing
  EXPECT_FALSE(Validate(p).ok());
  p = {};
  p.cells_across = 0;
  EXPECT_FALSE(Validate(p).ok());
  p = {};
  p.margin = -0.1;
  EXPECT_FALSE(Validate(p).ok());
  p = {};
  p.margin_min = -1;
  EXPECT_FALSE(Validate(p).ok());
  p = {};
  p.margin_min = std::nan("");
  EXPECT_FALSE(Validate(p).ok());
  p = {};
  p.fixed_cell = 2;
  EXPECT_FALSE(Validate(p).ok());
  p = {};
  p.cells_across = std::nan("");
  EXPECT_FALSE(Validate(p).ok());
}

}  // namespace
}  // namespace veil
