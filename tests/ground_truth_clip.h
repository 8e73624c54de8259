// Test helper: privacy judged against ground truth, not veil's detector. A clip
// rendered by ../shared/tools/leakcheck/make_clip.py (scripts/make-test-media.sh
// makes build/media/leakcheck/) has a lossless master and the exact box of every
// annotated face in every frame; a face is visible in an output frame when its
// box keeps leakcheck's criterion: both lumas resized to 64x64, SSIM (Gaussian
// window 11, sigma 1.5) averaged over the best-preserved half >= 0.91 (eval/pixel_judge.h,
// checked against leakcheck's own Python by eval_unit_test).
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
#include "eval/pixel_judge.h"
#include "media/reader.h"

namespace veil::test {

using veil::kLeakSsim;  // leakcheck's calibrated threshold

constexpr int kGroundTruthWidth = 1280;  // gt.csv's boxes are in the master's pixels (1280x720)

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

// The clip's gt.csv (frame,x,y,w,h,minside,clear,face; CRLF line ends), faces by frame,
// frames before `max_frames` only. Empty when the file is missing.
inline std::map<int, std::vector<GtFace>> LoadGroundTruthFaces(const std::string& dir, int max_frames) {
  std::map<int, std::vector<GtFace>> faces;
  std::ifstream gt(dir + "/gt.csv");
  std::string line;
  if (!std::getline(gt, line)) return faces;  // the header
  while (std::getline(gt, line)) {
    std::stringstream ss(line);
    std::string v[8];
    for (auto& x : v) std::getline(ss, x, ',');
    const int f = std::stoi(v[0]);
    if (f >= max_frames) continue;
    faces[f].push_back({std::stof(v[1]), std::stof(v[2]), std::stof(v[3]), std::stof(v[4]), std::stof(v[5]),
                        v[6] == "1", std::stoi(v[7])});
  }
  return faces;
}

inline GroundTruthClip LoadGroundTruthClip(const std::string& dir, int max_frames) {
  GroundTruthClip c;
  c.faces = LoadGroundTruthFaces(dir, max_frames);
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

// The faces (min side >= min_side in the 1280x720 clip) of clip frame `index` judged in an output
// luma of any size (the master is scaled to it with an area filter, as veil scales).
struct FaceVerdict {
  int judged = 0, visible = 0, clear_judged = 0, clear_visible = 0;  // clear: leakcheck's frontal, unoccluded
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
    const double ssim = veil::BestHalfSsim(master, out_luma, cv::Rect2d(f.x * s, f.y * s, f.w * s, f.h * s));
    ++v.judged;
    v.visible += ssim >= kLeakSsim;
    v.clear_judged += f.clear;
    v.clear_visible += f.clear && ssim >= kLeakSsim;
    v.max_ssim = std::max(v.max_ssim, ssim);
  }
  return v;
}

}  // namespace veil::test
