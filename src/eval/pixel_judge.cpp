#include "eval/pixel_judge.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace veil {
namespace {

// SSIM map of two float images, and the local variance of the first (leakcheck's ssim_map).
void SsimMap(const cv::Mat& a, const cv::Mat& b, cv::Mat& s, cv::Mat* var_a) {
  const double c1 = (0.01 * 255) * (0.01 * 255), c2 = (0.03 * 255) * (0.03 * 255);
  auto blur = [](const cv::Mat& z) {
    cv::Mat o;
    cv::GaussianBlur(z, o, cv::Size(11, 11), 1.5);
    return o;
  };
  const cv::Mat ma = blur(a), mb = blur(b);
  const cv::Mat ma2 = ma.mul(ma), mb2 = mb.mul(mb), mab = ma.mul(mb);
  const cv::Mat va = blur(a.mul(a)) - ma2, vb = blur(b.mul(b)) - mb2, cov = blur(a.mul(b)) - mab;
  cv::Mat num = (2 * mab + c1).mul(2 * cov + c2);
  cv::Mat den = (ma2 + mb2 + c1).mul(va + vb + c2);
  cv::divide(num, den, s);
  if (var_a) *var_a = va;
}

cv::Mat Patch64(const cv::Mat& img, const cv::Rect& r) {
  cv::Mat p, f;
  const cv::Mat roi = img(r);
  cv::resize(roi, p, cv::Size(64, 64), 0, 0, std::min(r.width, r.height) >= 64 ? cv::INTER_AREA : cv::INTER_LINEAR);
  p.convertTo(f, CV_32F);
  return f;
}

cv::Rect Grown(const cv::Rect2d& b, double g, cv::Size frame) {
  return ClipBoxLikeLeakcheck({b.x - g * b.width, b.y - g * b.height, (1 + 2 * g) * b.width, (1 + 2 * g) * b.height},
                              frame);
}

}  // namespace

cv::Rect ClipBoxLikeLeakcheck(const cv::Rect2d& b, cv::Size frame) {
  const int x0 = std::max(0, int(std::floor(b.x))), y0 = std::max(0, int(std::floor(b.y)));
  const int x1 = std::min(frame.width, int(std::ceil(b.x + b.width)));
  const int y1 = std::min(frame.height, int(std::ceil(b.y + b.height)));
  if (x1 <= x0 || y1 <= y0) return {};
  return {x0, y0, x1 - x0, y1 - y0};
}

double BestHalfSsim(const cv::Mat& master, const cv::Mat& processed, const cv::Rect2d& face) {
  const cv::Rect r = ClipBoxLikeLeakcheck(face, master.size());
  if (r.empty()) return 0;
  cv::Mat s;
  SsimMap(Patch64(master, r), Patch64(processed, r), s, nullptr);
  const double left = cv::mean(s(cv::Rect(0, 0, 32, 64)))[0], right = cv::mean(s(cv::Rect(32, 0, 32, 64)))[0];
  const double top = cv::mean(s(cv::Rect(0, 0, 64, 32)))[0], bottom = cv::mean(s(cv::Rect(0, 32, 64, 32)))[0];
  return std::max({left, right, top, bottom});
}

FrameJudgement JudgeFrame(const cv::Mat& master, const cv::Mat& processed, const FaceBoxes& faces) {
  cv::Mat a, b, s, va;
  master.convertTo(a, CV_32F);
  processed.convertTo(b, CV_32F);
  SsimMap(a, b, s, &va);
  const cv::Mat textured = va >= kTextureStd * kTextureStd;  // 255 where textured
  FrameJudgement j;
  // Over-blur: textured pixels outside the faces grown by 50% per side.
  cv::Mat sel = textured.clone();
  for (const cv::Rect2d& f : faces) {
    const cv::Rect g = Grown(f, kOverblurGrow, master.size());
    if (!g.empty()) sel(g).setTo(0);
  }
  const int n = cv::countNonZero(sel);
  j.judged_pixels = n;
  j.destroyed = (s < kOverblurSsim) & sel;
  if (n > 0) j.overblur = double(cv::countNonZero(j.destroyed)) / n;
  // Whole-frame SSIM: textured pixels outside the faces grown by 10% per side; the plain mean
  // when under 1% of the frame is left.
  cv::Mat sel2 = textured.clone();
  for (const cv::Rect2d& f : faces) {
    const cv::Rect g = Grown(f, 0.1, master.size());
    if (!g.empty()) sel2(g).setTo(0);
  }
  const int n2 = cv::countNonZero(sel2);
  j.frame_ssim = n2 > 0.01 * double(master.total()) ? cv::mean(s, sel2)[0] : cv::mean(s)[0];
  return j;
}

}  // namespace veil
