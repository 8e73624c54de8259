#include "server/snapshot.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace veil {

Result<JpegImage> EncodeThumbnail(const Frame& f, int max_width, int quality) {
  if (f.width < 2 || f.height < 2 || !f.y.data || !f.u.data || !f.v.data) return Status::Error("no picture");
  if (max_width < 2) return Status::Error("thumbnail width must be at least 2 px");
  int w = std::min(max_width, f.width) & ~1;
  int h = std::max(2, int(std::lround(double(f.height) * w / f.width)) & ~1);
  // Scale each plane into one contiguous I420 buffer, then convert: the
  // colour conversion runs on the small picture only.
  cv::Mat i420(h * 3 / 2, w, CV_8UC1);
  const auto plane = [](const Plane& p) { return cv::Mat(p.height, p.width, CV_8UC1, p.data, size_t(p.stride)); };
  cv::Mat y = i420.rowRange(0, h);
  cv::resize(plane(f.y), y, y.size(), 0, 0, cv::INTER_AREA);
  // U then V, each (w/2) x (h/2), stored as h/4 rows of w bytes in the I420 layout.
  uint8_t* chroma = i420.ptr(h);
  for (const Plane* p : {&f.u, &f.v}) {
    cv::Mat dst(h / 2, w / 2, CV_8UC1, chroma);
    cv::resize(plane(*p), dst, dst.size(), 0, 0, cv::INTER_AREA);
    chroma += size_t(w / 2) * (h / 2);
  }
  cv::Mat bgr;
  cv::cvtColor(i420, bgr, cv::COLOR_YUV2BGR_I420);
  JpegImage out;
  out.width = w;
  out.height = h;
  if (!cv::imencode(".jpg", bgr, out.bytes, {cv::IMWRITE_JPEG_QUALITY, std::clamp(quality, 1, 100)}))
    return Status::Error("JPEG encoding failed");
  return out;
}

}  // namespace veil
