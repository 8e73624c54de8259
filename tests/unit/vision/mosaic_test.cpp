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

// Independent reference for a shaped mosaic: a luma pixel is written when its centre lies in
// the rounded rectangle (the formula of vision/mosaic.h), a chroma sample when any of its four
// luma pixels is; a written pixel is the rounded mean of its whole cell (cells anchored at the
// rectangle's corner), the others stay.
void ExpectShapePixelated(const Frame& before, const Frame& after, const RoundRect& r, int cell) {
  auto inside = [&](int x, int y) {
    if (x < r.x0 || x >= r.x1 || y < r.y0 || y >= r.y1) return false;
    const double dx = std::max(0.0, std::abs(x + 0.5 - r.cx) - r.ix), dy = std::max(0.0, std::abs(y + 0.5 - r.cy) - r.iy);
    return (dx / r.rx) * (dx / r.rx) + (dy / r.ry) * (dy / r.ry) <= 1.0 + 1e-6;
  };
  struct P {
    const Plane *b, *a;
    int x0, y0, x1, y1, cell, sub;
  };
  for (const P& p : {P{&before.y, &after.y, r.x0, r.y0, r.x1, r.y1, cell, 1},
                     P{&before.u, &after.u, r.x0 / 2, r.y0 / 2, (r.x1 + 1) / 2, (r.y1 + 1) / 2, cell / 2, 2},
                     P{&before.v, &after.v, r.x0 / 2, r.y0 / 2, (r.x1 + 1) / 2, (r.y1 + 1) / 2, cell / 2, 2}}) {
    int written = 0;
    for (int y = 0; y < p.b->height; ++y)
      for (int x = 0; x < p.b->width; ++x) {
        bool in = false;
        for (int k = 0; k < p.sub * p.sub; ++k) in = in || inside(x * p.sub + k % p.sub, y * p.sub + k / p.sub);
        const uint8_t got = p.a->row(y)[x];
        if (!in) {
          ASSERT_EQ(got, p.b->row(y)[x]) << "outside the shape, changed at " << x << "," << y;
          continue;
        }
        ++written;
        const int cx = p.x0 + (x - p.x0) / p.cell * p.cell, cy = p.y0 + (y - p.y0) / p.cell * p.cell;
        double sum = 0;
        int n = 0;
        for (int yy = cy; yy < std::min(cy + p.cell, p.y1); ++yy)
          for (int xx = cx; xx < std::min(cx + p.cell, p.x1); ++xx, ++n) sum += p.b->row(yy)[xx];
        ASSERT_EQ(got, uint8_t(std::floor(sum / n + 0.5))) << "at " << x << "," << y;
      }
    EXPECT_GT(written, 0);
  }
}

TEST(Mosaic, RoundMaskOfAFreshFaceIsItsEllipsePixelExact) {
  MosaicParams p;
  p.round_scale = 1.0;
  p.margin = 0.1;
  p.margin_min = 0;
  const Box face{40, 30, 100, 120};
  const RoundRect r = RoundMaskFor(face, face, p, 2.f, 256, 200);
  ASSERT_TRUE(r.round);
  EXPECT_EQ(r.x0, 30);  // the rectangle is MaskRectFor's
  EXPECT_EQ(r.x1, 150);
  EXPECT_EQ(r.y0, 18);
  EXPECT_EQ(r.y1, 162);
  EXPECT_FLOAT_EQ(r.ix, 0.f);  // no motion: the ellipse inscribed in the face box plus its margin
  EXPECT_FLOAT_EQ(r.rx, 60.f);
  EXPECT_FLOAT_EQ(r.ry, 72.f);
  // pi/4 of the rectangle, to the pixel
  EXPECT_NEAR(double(r.Area()), M_PI / 4 * 120 * 144, 120 * 144 * 0.01);
  int a, b;
  r.RowSpan(89, &a, &b);  // the middle row: the whole width
  EXPECT_EQ(a, 30);
  EXPECT_EQ(b, 150);
  r.RowSpan(18, &a, &b);  // the top row: a few pixels around the centre
  EXPECT_GT(a, 80);
  EXPECT_LT(b, 100);
  r.RowSpan(17, &a, &b);  // outside the rectangle
  EXPECT_GE(a, b);

  // round_scale widens the ellipse within the same rectangle: sqrt(2) leaves the rectangle whole.
  MosaicParams wide = p;
  wide.round_scale = 1.2;
  const RoundRect w = RoundMaskFor(face, face, wide, 2.f, 256, 200);
  EXPECT_FLOAT_EQ(w.rx, 72.f);
  EXPECT_EQ(w.x0, r.x0);
  EXPECT_EQ(w.y1, r.y1);
  EXPECT_GT(w.Area(), r.Area());
  wide.round_scale = 1.5;
  EXPECT_EQ(RoundMaskFor(face, face, wide, 2.f, 256, 200).Area(), int64_t(120) * 144);

  auto f = MakeFrame(256, 200), orig = MakeFrame(256, 200);
  FillRandom(*f, 3);
  CopyFrame(*f, *orig);
  MosaicShape(*f, r, 16);
  ExpectShapePixelated(*orig, *f, r, 16);
}

TEST(Mosaic, RoundMaskHoldsTheFaceEllipseAnywhereItsMotionBoundAllows) {
  MosaicParams p;
  p.round_scale = 1.0;  // the tightest shape allowed
  p.margin = 0.1;
  p.margin_min = 10;
  const Box face{300, 200, 80, 96};
  const float gx = 30, gy = 18;  // the tracker's motion bound, per side
  const Box grown{face.x - gx, face.y - gy, face.w + 2 * gx, face.h + 2 * gy};
  const RoundRect r = RoundMaskFor(face, grown, p, 2.f, 1280, 720);
  const Rect rect = MaskRectFor(grown, p, 2.f, 1280, 720);
  EXPECT_EQ(r.x0, rect.x0);
  EXPECT_EQ(r.x1, rect.x1);
  EXPECT_EQ(r.y0, rect.y0);
  EXPECT_EQ(r.y1, rect.y1);
  EXPECT_FLOAT_EQ(r.ix, gx);
  EXPECT_FLOAT_EQ(r.iy, gy);
  // The face moved anywhere in the bound (corners included): the ellipse inscribed in its box
  // plus the margin (20 px floor: 0.1 * 80 < 20) is inside the region, pixel for pixel.
  auto in_region = [&](int x, int y) {
    int a, b;
    r.RowSpan(y, &a, &b);
    return x >= a && x < b;
  };
  for (float ox : {-gx, 0.f, gx})
    for (float oy : {-gy, 0.f, gy}) {
      const float cx = face.x + face.w / 2 + ox, cy = face.y + face.h / 2 + oy;
      const float ax = face.w / 2 + 20, ay = face.h / 2 + 20;
      int missed = 0, n = 0;
      for (int y = int(cy - ay); y <= int(cy + ay); ++y)
        for (int x = int(cx - ax); x <= int(cx + ax); ++x) {
          const float dx = (x + 0.5f - cx) / ax, dy = (y + 0.5f - cy) / ay;
          if (dx * dx + dy * dy > 0.999f) continue;
          ++n;
          missed += !in_region(x, y);
        }
      EXPECT_GT(n, 10000);
      EXPECT_EQ(missed, 0) << "face moved by " << ox << "," << oy;
    }
  // ...and the corners of the rectangle, which no such ellipse reaches, are left alone.
  EXPECT_FALSE(in_region(r.x0, r.y0));
  EXPECT_FALSE(in_region(r.x1 - 1, r.y1 - 1));
  EXPECT_LT(r.Area(), int64_t(rect.width()) * rect.height());

  // Clipped by the frame's edge, the shape stays where it was: the clipped part is gone, the
  // rest is unchanged.
  const Box edge_face{-30, 200, 80, 96};
  const RoundRect e = RoundMaskFor(edge_face, edge_face, p, 2.f, 1280, 720);
  EXPECT_EQ(e.x0, 0);
  EXPECT_FLOAT_EQ(e.cx, 10.f);
  int a, b;
  e.RowSpan(248, &a, &b);
  EXPECT_EQ(a, 0);

  auto f = MakeFrame(640, 480), orig = MakeFrame(640, 480);
  FillRandom(*f, 4);
  CopyFrame(*f, *orig);
  const RoundRect moved = RoundMaskFor(Box{200, 150, 81, 95}, Box{171, 133, 139, 131}, p, 2.f, 640, 480);
  MosaicShape(*f, moved, 10);
  ExpectShapePixelated(*orig, *f, moved, 10);
}

TEST(Mosaic, SquareMasksWhenRoundIsOff) {
  MosaicParams p;
  p.round = false;
  const Box face{100, 100, 60, 60};
  const RoundRect r = RoundMaskFor(face, face, p, 2.f, 640, 480);
  EXPECT_FALSE(r.round);
  EXPECT_EQ(r.Area(), int64_t(r.width()) * r.height());
  auto f = MakeFrame(320, 240), orig = MakeFrame(320, 240);
  FillRandom(*f, 5);
  CopyFrame(*f, *orig);
  MosaicShape(*f, r, 8);
  ExpectPixelated(orig->y, f->y, r.x0, r.y0, r.x1, r.y1, 8);
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
  p.round_scale = 0.9;  // an ellipse inside the face's own box
  EXPECT_FALSE(Validate(p).ok());
  p.round_scale = std::nan("");
  EXPECT_FALSE(Validate(p).ok());
  p = {};
  p.cells_across = std::nan("");
  EXPECT_FALSE(Validate(p).ok());
}

}  // namespace
}  // namespace veil
