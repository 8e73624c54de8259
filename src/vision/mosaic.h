// Pixelation (mosaic) applied in place on full-resolution I420 planes.
#pragma once
#include <string>
#include <vector>

#include "core/frame.h"
#include "core/status.h"
#include "vision/box.h"

namespace veil {

struct MosaicParams {
  double cells_across = 3.0;  // cells across a face's detected width: a big face is as coarse as a small one
  int min_cell = 8;           // never finer than this (luma px)
  double margin = 0.10;       // each face box grows by this fraction of its size per side (docs/privacy.md)...
  double margin_min = 10;     // ...and by at least this many pixels of the detection copy: a small face's box
                              // is off by a few of the detector's pixels whatever its size
  int full_frame_cell = 40;   // cell size for full_blur and fail-closed frames (luma px)
  int fixed_cell = 0;         // >0: this many px for every face, ignoring its size
};

// Rejects wrong or degenerate parameters (never silently replaced).
Status Validate(const MosaicParams& p);

// Integer rectangle [x0,x1) x [y0,y1) in luma pixels.
struct Rect {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  bool empty() const { return x1 <= x0 || y1 <= y0; }
  int width() const { return x1 - x0; }
  int height() const { return y1 - y0; }
};

// The rectangle actually pixelated for `box`: grown by the margin, snapped
// outward to even coordinates (so chroma cells align), clipped to the frame.
Rect MosaicRectFor(const Box& box, int frame_w, int frame_h);

// The mask of a face box: grown per side by max(margin * its size, margin_min * px_per_detect_px),
// then as MosaicRectFor. px_per_detect_px: frame pixels per pixel of the detection copy.
Rect MaskRectFor(const Box& box, const MosaicParams& p, float px_per_detect_px, int frame_w, int frame_h);

// Luma cell size for a face `face_width` px wide; always even and >= min_cell.
int CellSizeFor(float face_width, const MosaicParams& p);

// Pixelates `r` in place: cells of `cell` luma px (cell/2 on chroma) tiled
// from the rectangle's top-left corner, each set to the rounded mean of the
// original pixels of that cell (partial cells at the edges use their own mean).
void MosaicRect(Frame& f, const Rect& r, int cell);
void MosaicFullFrame(Frame& f, int cell);

}  // namespace veil
