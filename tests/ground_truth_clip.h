// Test helper: privacy judged against ground truth, not veil's detector. A clip
// rendered by ../shared/tools/leakcheck/make_clip.py (scripts/make-test-media.sh
// makes build/media/leakcheck/) has a lossless master and the exact box of every
// annotated face in every frame; a face is visible in an output frame when its
// box keeps leakcheck's criterion: both lumas resized to 64x64, SSIM (Gaussian
// window 11, sigma 1.5) averaged over the best-preserved half >= 0.91.
#pragma once
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "core/frame.h"
#include "media/reader.h"

namespace veil::test {

constexpr double kLeakSsim = 0.91;  // leakcheck's calibrated threshold

struct GtFace {
  float x = 0, y = 0, w = 0, h = 0, minside = 0;
  bool clear = false;
  int face = 0;
};

struct GroundTruthClip {
  std::vector<cv::Mat> master;                // lossless luma, 1280x720, by frame
  std::map<int, std::vector<GtFace>> faces;  // by frame
  bool ok() const { return !master.empty() && !faces.empty(); }
};

inline GroundTruthClip LoadGroundTruthClip(const std::string& dir, int max_frames) {
  GroundTruthClip c;
  std::ifstream gt(dir + "/gt.csv");
  std::string line;
  std::getline(gt, line);  // frame,x,y,w,h,minside,clear,face
  while (std::getline(gt, line)) {
    std::stringstream ss(line);
    std::string v[8];
    for (auto& x : v) std::getline(ss, x, ',');
    const int f = std::stoi(v[0]);
    if (f >= max_frames) continue;
    c.faces[f].push_back({std::stof(v[1]), std::stof(v[2]), std::stof(v[3]), std::stof(v[4]), std::stof(v[5]),
                          v[6] == "1", std::stoi(v[7])});
  }
  auto r = MediaReader::Open(dir + "/master.mkv");
  if (!r.ok()) return {};
  while (int(c.master.size()) < max_frames) {
    ReadItem it = (*r)->Next();
    if (std::holds_alternative<EndOfStream>(it)) break;
    if (auto* f = std::get_if<FramePtr>(&it))
      c.master.push_back(cv::Mat((*f)->height, (*f)->width, CV_8UC1, (*f)->y.data, size_t((*f)->y.stride)).clone());
  }
  return c;
}

inline cv::Mat Patch64(const cv::Mat& luma, const cv::Rect& box) {
  cv::Mat out;
  const cv::Mat p = luma(box);
  cv::resize(p, out, {64, 64}, 0, 0, std::min(p.cols, p.rows) >= 64 ? cv::INTER_AREA : cv::INTER_LINEAR);
  out.convertTo(out, CV_32F);
  return out;
}

// leakcheck's best-half SSIM of one face box (in `out`'s pixels) between a master luma and an
// output luma of the same size.
inline double BestHalfSsim(const cv::Mat& master, const cv::Mat& out, cv::Rect box) {
  box &= cv::Rect(0, 0, out.cols, out.rows);
  if (box.width < 2 || box.height < 2) return 0;
  const cv::Mat a = Patch64(master, box), b = Patch64(out, box);
  const double c1 = 6.5025, c2 = 58.5225;  // (0.01*255)^2, (0.03*255)^2
  auto blur = [](const cv::Mat& z) {
    cv::Mat o;
    cv::GaussianBlur(z, o, {11, 11}, 1.5);
    return o;
  };
  const cv::Mat ma = blur(a), mb = blur(b);
  const cv::Mat va = blur(a.mul(a)) - ma.mul(ma), vb = blur(b.mul(b)) - mb.mul(mb), cov = blur(a.mul(b)) - ma.mul(mb);
  cv::Mat num = (2 * ma.mul(mb) + c1).mul(2 * cov + c2), den = (ma.mul(ma) + mb.mul(mb) + c1).mul(va + vb + c2);
  const cv::Mat s = num / den;
  return std::max({cv::mean(s.colRange(0, 32))[0], cv::mean(s.colRange(32, 64))[0], cv::mean(s.rowRange(0, 32))[0],
                   cv::mean(s.rowRange(32, 64))[0]});
}

// The faces (min side >= min_side in the 1280x720 clip) of clip frame `index` judged in an output
// luma of any size (the master is scaled to it with an area filter, as veil scales).
struct FaceVerdict {
  int judged = 0, visible = 0;
  double max_ssim = 0;
};
inline FaceVerdict JudgeFrame(const GroundTruthClip& clip, int index, const cv::Mat& out_luma, float min_side = 40) {
  FaceVerdict v;
  auto it = clip.faces.find(index);
  if (it == clip.faces.end() || index >= int(clip.master.size())) return v;
  cv::Mat master = clip.master[size_t(index)];
  if (master.size() != out_luma.size()) cv::resize(master, master, out_luma.size(), 0, 0, cv::INTER_AREA);
  const double s = double(out_luma.cols) / clip.master[size_t(index)].cols;
  for (const GtFace& f : it->second) {
    if (f.minside < min_side) continue;
    const int x0 = int(std::floor(f.x * s)), y0 = int(std::floor(f.y * s));
    const cv::Rect box(x0, y0, int(std::ceil((f.x + f.w) * s)) - x0, int(std::ceil((f.y + f.h) * s)) - y0);
    const double ssim = BestHalfSsim(master, out_luma, box);
    ++v.judged;
    v.visible += ssim >= kLeakSsim;
    v.max_ssim = std::max(v.max_ssim, ssim);
  }
  return v;
}

}  // namespace veil::test
