// Pixelation (mosaic) applied in place on full-resolution I420 planes.
#pragma once
#include <cstdint>
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
  // A face's mask has its corners rounded (docs/privacy.md, "Round masks"): the face's own
  // ellipse (its box plus the margin) swept over the rectangle its centre can have moved in.
  // False: the whole rectangle.
  bool round = true;
  // The face's ellipse is scaled by this, within the rectangle: 1 is the ellipse inscribed in the
  // face's box plus the margin; sqrt(2) (1.4142) passes through that box's corners, which leaves
  // the whole rectangle. 1.2: a tighter ellipse leaks turned heads whose box sits off the face
  // (docs/privacy.md, "Round masks").
  double round_scale = 1.2;
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

// A region pixelated for a face: a rectangle centred on (cx, cy), of half-extents ix + rx and
// iy + ry, whose corners are quarter ellipses of semi-axes rx, ry (ix = iy = 0: an ellipse),
// clipped to the frame as the Rect it is. Pixels whose centres lie inside are pixelated. With
// round false it is the plain Rect.
struct RoundRect : Rect {
  bool round = false;
  float cx = 0, cy = 0, ix = 0, iy = 0, rx = 0, ry = 0;
  RoundRect() = default;
  RoundRect(const Rect& r) : Rect(r) {}  // NOLINT(google-explicit-constructor): a plain rectangle
  // Columns [*x0, *x1) of row y inside the region (empty: *x0 >= *x1).
  void RowSpan(int y, int* x0, int* x1) const;
  int64_t Area() const;  // pixels inside
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
// The same, written only inside the region (a plain RoundRect: the whole rectangle; the cells'
// means still take the whole cell: the pixels left outside are the original ones anyway).
// Chroma samples are written where any of their luma pixels is.
void MosaicShape(Frame& f, const RoundRect& r, int cell);
// The mask of a face: MaskRectFor(grown, ...), with its corners rounded when p.round. The
// corner ellipse is the face's own: half of `face` (the track's box before growth) plus the
// margin; the straight part between the corners is what the face's centre can have moved
// (`grown` minus `face`, per side). So the region is the union of the face's ellipse over every
// position the motion bound allows.
RoundRect RoundMaskFor(const Box& face, const Box& grown, const MosaicParams& p, float px_per_detect_px,
                       int frame_w, int frame_h);
void MosaicFullFrame(Frame& f, int cell);

}  // namespace veil
