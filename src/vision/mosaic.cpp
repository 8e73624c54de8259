#include "vision/mosaic.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace veil {

Status Validate(const MosaicParams& p) {
  if (!(p.cells_across >= 2.0 && p.cells_across <= 64.0))
    return Status::Error("mosaic cells_across must be in [2, 64], got " + std::to_string(p.cells_across));
  if (p.min_cell < 4 || p.min_cell > 256)
    return Status::Error("mosaic min_cell must be in [4, 256] px, got " + std::to_string(p.min_cell));
  if (!(p.margin >= 0.0 && p.margin <= 2.0))
    return Status::Error("mosaic margin must be in [0, 2], got " + std::to_string(p.margin));
  if (!(p.margin_min >= 0.0 && p.margin_min <= 256.0))
    return Status::Error("mosaic margin_min must be in [0, 256] px, got " + std::to_string(p.margin_min));
  if (!(p.round_scale >= 1.0 && p.round_scale <= 1.5))
    return Status::Error("mosaic round_scale must be in [1, 1.5], got " + std::to_string(p.round_scale));
  if (p.full_frame_cell < 8 || p.full_frame_cell > 512)
    return Status::Error("mosaic full_frame_cell must be in [8, 512] px, got " +
                         std::to_string(p.full_frame_cell));
  if (p.fixed_cell != 0 && (p.fixed_cell < 4 || p.fixed_cell > 256))
    return Status::Error("mosaic fixed cell must be 0 (adaptive) or in [4, 256] px, got " +
                         std::to_string(p.fixed_cell));
  return Status::Ok();
}

Rect MosaicRectFor(const Box& b, int fw, int fh) {
  auto even_down = [](float v) { return static_cast<int>(std::floor(v / 2.f)) * 2; };
  auto even_up = [](float v) { return static_cast<int>(std::ceil(v / 2.f)) * 2; };
  Rect r{even_down(b.x), even_down(b.y), even_up(b.x2()), even_up(b.y2())};
  r.x0 = std::clamp(r.x0, 0, fw);
  r.y0 = std::clamp(r.y0, 0, fh);
  r.x1 = std::clamp(r.x1, 0, fw);
  r.y1 = std::clamp(r.y1, 0, fh);
  return r;
}

namespace {
Box GrowByMargin(const Box& b, const MosaicParams& p, float px_per_detect_px) {
  const float floor_px = float(p.margin_min) * std::max(px_per_detect_px, 0.f);
  const float dx = std::max(float(p.margin) * b.w, floor_px), dy = std::max(float(p.margin) * b.h, floor_px);
  return {b.x - dx, b.y - dy, b.w + 2 * dx, b.h + 2 * dy};
}
}  // namespace

Rect MaskRectFor(const Box& b, const MosaicParams& p, float px_per_detect_px, int fw, int fh) {
  return MosaicRectFor(GrowByMargin(b, p, px_per_detect_px), fw, fh);
}

RoundRect RoundMaskFor(const Box& face, const Box& grown, const MosaicParams& p, float px_per_detect_px, int fw,
                       int fh) {
  const Box outer = GrowByMargin(grown, p, px_per_detect_px);
  RoundRect r(MosaicRectFor(outer, fw, fh));
  if (!p.round) return r;
  r.round = true;
  r.cx = outer.x + outer.w / 2;
  r.cy = outer.y + outer.h / 2;
  r.ix = std::clamp((grown.w - face.w) / 2, 0.f, outer.w / 2);
  r.iy = std::clamp((grown.h - face.h) / 2, 0.f, outer.h / 2);
  r.rx = (outer.w / 2 - r.ix) * float(p.round_scale);
  r.ry = (outer.h / 2 - r.iy) * float(p.round_scale);
  return r;
}

void RoundRect::RowSpan(int y, int* a, int* b) const {
  *a = x0;
  *b = x1;
  if (y < y0 || y >= y1) {
    *b = *a;
    return;
  }
  if (!round) return;
  const float dy = std::max(0.f, std::abs(float(y) + 0.5f - cy) - iy);
  if (ry <= 0.f || dy >= ry) {
    *b = *a;
    return;
  }
  const float half = ix + rx * std::sqrt(1.f - (dy / ry) * (dy / ry));
  // Pixel x is inside when its centre x + 0.5 lies in [cx - half, cx + half].
  *a = std::max(x0, static_cast<int>(std::ceil(cx - half - 0.5f)));
  *b = std::min(x1, static_cast<int>(std::floor(cx + half - 0.5f)) + 1);
}

int64_t RoundRect::Area() const {
  int64_t n = 0;
  for (int y = y0; y < y1; ++y) {
    int a, b;
    RowSpan(y, &a, &b);
    n += std::max(0, b - a);
  }
  return n;
}

int CellSizeFor(float face_width, const MosaicParams& p) {
  if (p.fixed_cell > 0) return (p.fixed_cell + 1) / 2 * 2;
  const int c = static_cast<int>(std::lround(face_width / p.cells_across / 2.0)) * 2;
  const int min_even = (p.min_cell + 1) / 2 * 2;
  return std::max(c, min_even);
}

namespace {
// Pixelates [x0,x1)x[y0,y1) of one plane with square cells of `cell` px.
// Per band of `cell` rows: column sums (a vectorizable u8 -> u32 add), then
// one sum per cell, then one pattern row copied over the band's rows.
// `span(y, &a, &b)`: the columns of row y to write (within [x0, x1)); the cells' means take the
// whole cell whatever is written.
template <typename Span>
void MosaicPlane(const Plane& pl, int x0, int y0, int x1, int y1, int cell, const Span& span) {
  x0 = std::max(x0, 0);
  y0 = std::max(y0, 0);
  x1 = std::min(x1, pl.width);
  y1 = std::min(y1, pl.height);
  if (x1 <= x0 || y1 <= y0 || cell < 1) return;
  const int w = x1 - x0;
  thread_local std::vector<uint32_t> colsum;
  thread_local std::vector<uint8_t> pattern;
  colsum.resize(static_cast<size_t>(w));
  pattern.resize(static_cast<size_t>(w));
  for (int by = y0; by < y1; by += cell) {
    const int ey = std::min(by + cell, y1);
    uint32_t* cs = colsum.data();
    std::fill(cs, cs + w, 0u);
    for (int y = by; y < ey; ++y) {
      const uint8_t* row = pl.row(y) + x0;
      for (int x = 0; x < w; ++x) cs[x] += row[x];
    }
    for (int sx = 0; sx < w; sx += cell) {
      const int ex = std::min(sx + cell, w);
      uint32_t sum = 0;
      for (int x = sx; x < ex; ++x) sum += cs[x];
      const uint32_t n = static_cast<uint32_t>((ex - sx) * (ey - by));
      std::fill(pattern.begin() + sx, pattern.begin() + ex, static_cast<uint8_t>((sum + n / 2) / n));
    }
    for (int y = by; y < ey; ++y) {
      int a = x0, b = x1;
      span(y, &a, &b);
      a = std::max(a, x0);
      b = std::min(b, x1);
      if (b > a) std::memcpy(pl.row(y) + a, pattern.data() + (a - x0), static_cast<size_t>(b - a));
    }
  }
}
}  // namespace

void MosaicRect(Frame& f, const Rect& r, int cell) { MosaicShape(f, RoundRect(r), cell); }

void MosaicShape(Frame& f, const RoundRect& r, int cell) {
  if (r.empty() || cell < 2) return;
  // A plain rectangle keeps every row whole (MosaicPlane starts each span at [x0, x1)).
  MosaicPlane(f.y, r.x0, r.y0, r.x1, r.y1, cell, [&](int y, int* a, int* b) {
    if (r.round) r.RowSpan(y, a, b);
  });
  // A chroma sample covers luma rows 2y, 2y+1 and columns 2x, 2x+1: written where either row is.
  auto chroma = [&](int y, int* a, int* b) {
    if (!r.round) return;
    int a0, b0, a1, b1;
    r.RowSpan(2 * y, &a0, &b0);
    r.RowSpan(2 * y + 1, &a1, &b1);
    if (b0 <= a0) a0 = a1, b0 = b1;
    if (b1 <= a1) a1 = a0, b1 = b0;
    if (b0 <= a0) {
      *b = *a;
      return;
    }
    *a = std::min(a0, a1) / 2;
    *b = (std::max(b0, b1) + 1) / 2;
  };
  const int cc = std::max(1, cell / 2);
  const int cx0 = r.x0 / 2, cy0 = r.y0 / 2, cx1 = (r.x1 + 1) / 2, cy1 = (r.y1 + 1) / 2;
  MosaicPlane(f.u, cx0, cy0, cx1, cy1, cc, chroma);
  MosaicPlane(f.v, cx0, cy0, cx1, cy1, cc, chroma);
}

void MosaicFullFrame(Frame& f, int cell) { MosaicRect(f, Rect{0, 0, f.width, f.height}, cell); }

}  // namespace veil
