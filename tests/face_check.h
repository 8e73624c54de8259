// Test helper: does a face region of an output frame still carry the
// source's detail (i.e. was it left unpixelated)?
#pragma once
#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

#include "core/frame.h"
#include "vision/box.h"

namespace veil::test {

// How much of the source's fine detail survives in the output over a box:
// normalized cross-correlation of the band-pass (difference of Gaussians)
// luma of both. A re-encoded but untouched face keeps its eyes, nose and
// mouth edges (high correlation); a mosaic replaces them with cell edges
// that do not line up with them (correlation near zero).
// The same on two luma crops of one size (e.g. a source face kept from an earlier decode).
inline double DetailCorrelation(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.cols < 8 || a.rows < 8) return 0;
  auto band = [&](const cv::Mat& y) {
    cv::Mat m, g1, g2;
    y.convertTo(m, CV_32F);
    const double s = std::max(1.0, y.cols / 64.0);  // scale with the face: features, not pixels
    cv::GaussianBlur(m, g1, cv::Size(), s);
    cv::GaussianBlur(m, g2, cv::Size(), 3 * s);
    cv::Mat d = g1 - g2;
    return cv::Mat(d - cv::mean(d)[0]);
  };
  const cv::Mat da = band(a), db = band(b);
  const double num = da.dot(db), den = std::sqrt(da.dot(da) * db.dot(db));
  return den > 0 ? num / den : 0;
}

// The box (clipped to the frame) as an integer rectangle; empty when under 8x8.
inline cv::Rect ClipBox(const Box& box, int width, int height) {
  const int x0 = std::max(0, int(box.x)), y0 = std::max(0, int(box.y));
  const int x1 = std::min(width, int(box.x2())), y1 = std::min(height, int(box.y2()));
  if (x1 - x0 < 8 || y1 - y0 < 8) return {};
  return {x0, y0, x1 - x0, y1 - y0};
}

inline cv::Mat LumaOf(const Frame& f) { return cv::Mat(f.height, f.width, CV_8UC1, f.y.data, f.y.stride); }

inline double DetailCorrelation(const Frame& a, const Frame& b, const Box& box) {
  const cv::Rect roi = ClipBox(box, a.width, a.height);
  if (roi.empty()) return 0;
  return DetailCorrelation(LumaOf(a)(roi), LumaOf(b)(roi));
}

// A face region whose output detail still correlates this well with the
// source was not pixelated (measured: untouched >= 0.99, 8-cell mosaic <= 0.52).
constexpr double kLeakCorrelation = 0.75;

}  // namespace veil::test
