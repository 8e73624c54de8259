#include "vision/mosaic.h"

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

Rect MaskRectFor(const Box& b, const MosaicParams& p, float px_per_detect_px, int fw, int fh) {
  const float floor_px = float(p.margin_min) * std::max(px_per_detect_px, 0.f);
  const float dx = std::max(float(p.margin) * b.w, floor_px), dy = std::max(float(p.margin) * b.h, floor_px);
  return MosaicRectFor({b.x - dx, b.y - dy, b.w + 2 * dx, b.h + 2 * dy}, fw, fh);
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
void MosaicPlane(const Plane& pl, int x0, int y0, int x1, int y1, int cell) {
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
    for (int y = by; y < ey; ++y) std::memcpy(pl.row(y) + x0, pattern.data(), static_cast<size_t>(w));
  }
}
}  // namespace

void MosaicRect(Frame& f, const Rect& r, int cell) {
  if (r.empty() || cell < 2) return;
  MosaicPlane(f.y, r.x0, r.y0, r.x1, r.y1, cell);
  const int cc = std::max(1, cell / 2);
  const int cx0 = r.x0 / 2, cy0 = r.y0 / 2, cx1 = (r.x1 + 1) / 2, cy1 = (r.y1 + 1) / 2;
  MosaicPlane(f.u, cx0, cy0, cx1, cy1, cc);
  MosaicPlane(f.v, cx0, cy0, cx1, cy1, cc);
}

void MosaicFullFrame(Frame& f, int cell) { MosaicRect(f, Rect{0, 0, f.width, f.height}, cell); }

}  // namespace veil
