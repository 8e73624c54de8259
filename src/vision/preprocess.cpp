#include "vision/preprocess.h"

#include <opencv2/imgproc.hpp>

namespace veil {

cv::Size FitSize(int fw, int fh, cv::Size box) {
  const double s = std::min({1.0, double(box.width) / fw, double(box.height) / fh});
  return {std::max(2, int(fw * s) / 2 * 2), std::max(2, int(fh * s) / 2 * 2)};
}

void DownscaleToBgr(const Frame& f, cv::Size size, cv::Mat& bgr) {
  thread_local cv::Mat i420;
  const int w = size.width, h = size.height;
  i420.create(h * 3 / 2, w, CV_8UC1);
  const cv::Mat y(f.y.height, f.y.width, CV_8UC1, f.y.data, f.y.stride);
  const cv::Mat u(f.u.height, f.u.width, CV_8UC1, f.u.data, f.u.stride);
  const cv::Mat v(f.v.height, f.v.width, CV_8UC1, f.v.data, f.v.stride);
  cv::Mat dy = i420.rowRange(0, h);
  // I420 layout: U then V, each (w/2 x h/2) packed row after row.
  cv::Mat du(h / 2, w / 2, CV_8UC1, i420.ptr(h));
  cv::Mat dv(h / 2, w / 2, CV_8UC1, i420.ptr(h) + (w / 2) * (h / 2));
  const int interp = cv::INTER_AREA;  // anti-aliased: small faces survive the downscale
  cv::resize(y, dy, size, 0, 0, interp);
  cv::resize(u, du, du.size(), 0, 0, interp);
  cv::resize(v, dv, dv.size(), 0, 0, interp);
  cv::cvtColor(i420, bgr, cv::COLOR_YUV2BGR_I420);
}

void LumaThumbnail(const Frame& f, uint8_t out[kThumbW * kThumbH]) {
  for (int by = 0; by < kThumbH; ++by) {
    for (int bx = 0; bx < kThumbW; ++bx) {
      unsigned s = 0;
      for (int sy = 0; sy < 4; ++sy) {
        const int y = std::min(f.height - 1, (by * 4 + sy) * f.height / (kThumbH * 4) + f.height / (kThumbH * 8));
        const uint8_t* row = f.y.row(y);
        for (int sx = 0; sx < 4; ++sx)
          s += row[std::min(f.width - 1, (bx * 4 + sx) * f.width / (kThumbW * 4) + f.width / (kThumbW * 8))];
      }
      out[by * kThumbW + bx] = static_cast<uint8_t>(s / 16);
    }
  }
}

}  // namespace veil
