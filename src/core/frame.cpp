#include "core/frame.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace veil {
namespace {
constexpr int kAlign = 32;
int AlignUp(int v) { return (v + kAlign - 1) / kAlign * kAlign; }

std::unique_ptr<Frame> Allocate(int w, int h) {
  if (w <= 0 || h <= 0 || w > 16384 || h > 16384) throw std::invalid_argument("frame size out of range");
  auto f = std::make_unique<Frame>();
  f->width = w;
  f->height = h;
  const int cw = (w + 1) / 2, ch = (h + 1) / 2;
  const int ys = AlignUp(w), cs = AlignUp(cw);
  f->storage.resize(static_cast<size_t>(ys) * h + 2 * static_cast<size_t>(cs) * ch);
  uint8_t* p = f->storage.data();
  f->y = {p, ys, w, h};
  f->u = {p + static_cast<size_t>(ys) * h, cs, cw, ch};
  f->v = {f->u.data + static_cast<size_t>(cs) * ch, cs, cw, ch};
  return f;
}
}  // namespace

std::shared_ptr<FramePool> FramePool::Create(int width, int height, size_t max_free) {
  return std::shared_ptr<FramePool>(new FramePool(width, height, max_free));
}

FramePtr FramePool::Acquire() {
  std::unique_ptr<Frame> f;
  {
    std::lock_guard lk(mu_);
    if (!free_.empty()) {
      f = std::move(free_.back());
      free_.pop_back();
    } else {
      ++allocations_;
    }
  }
  if (!f) f = Allocate(width_, height_);
  f->pts = 0;
  f->index = 0;
  auto self = shared_from_this();
  return FramePtr(f.release(), [self](Frame* fr) { self->Release(fr); });
}

void FramePool::Release(Frame* f) {
  std::unique_ptr<Frame> owned(f);
  std::lock_guard lk(mu_);
  if (free_.size() < max_free_) free_.push_back(std::move(owned));
}

size_t FramePool::allocations() const {
  std::lock_guard lk(mu_);
  return allocations_;
}

FramePtr MakeFrame(int width, int height) { return FramePtr(Allocate(width, height).release()); }

void CopyFrame(const Frame& src, Frame& dst) {
  if (src.width != dst.width || src.height != dst.height) throw std::invalid_argument("CopyFrame size");
  const Plane* sp[3] = {&src.y, &src.u, &src.v};
  const Plane* dp[3] = {&dst.y, &dst.u, &dst.v};
  for (int i = 0; i < 3; ++i)
    for (int r = 0; r < sp[i]->height; ++r) std::memcpy(dp[i]->row(r), sp[i]->row(r), sp[i]->width);
  dst.pts = src.pts;
  dst.index = src.index;
}

LumaThumb LumaThumb::Of(const Frame& f) {
  LumaThumb t;
  for (int by = 0; by < kH; ++by) {
    for (int bx = 0; bx < kW; ++bx) {
      unsigned s = 0;
      for (int sy = 0; sy < 4; ++sy) {
        const int y = std::min(f.height - 1, (by * 4 + sy) * f.height / (kH * 4) + f.height / (kH * 8));
        const uint8_t* row = f.y.row(y);
        for (int sx = 0; sx < 4; ++sx)
          s += row[std::min(f.width - 1, (bx * 4 + sx) * f.width / (kW * 4) + f.width / (kW * 8))];
      }
      t.v[by * kW + bx] = static_cast<uint8_t>(s / 16);
    }
  }
  return t;
}

double LumaThumb::MeanAbsDiff(const LumaThumb& o) const {
  int sum = 0;
  for (size_t i = 0; i < v.size(); ++i) sum += std::abs(int(v[i]) - int(o.v[i]));
  return double(sum) / double(v.size());
}

}  // namespace veil
