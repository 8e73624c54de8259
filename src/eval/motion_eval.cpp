#include "eval/motion_eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>

#include "eval/pixel_judge.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

namespace veil {
namespace {
nlohmann::json Parts(const std::array<double, kOverblurParts>& v) {
  nlohmann::json j = nlohmann::json::object();
  for (int k = 0; k < kOverblurParts; ++k) j[kOverblurPartNames[k]] = v[size_t(k)];
  return j;
}
}  // namespace

std::array<int64_t, kOverblurParts> SplitOverblur(const cv::Mat& destroyed, const FrameReport& rep,
                                                  const std::vector<cv::Rect2d>& faces) {
  std::array<int64_t, kOverblurParts> n{};
  if (rep.origins.empty() && !rep.rects.empty()) {  // fail-closed or full_blur: one whole-frame rect
    n[size_t(OverblurPart::kWholeFrame)] = cv::countNonZero(destroyed);
    return n;
  }
  cv::Mat label(destroyed.size(), CV_8U, cv::Scalar(int(OverblurPart::kOutsideMasks)));
  auto paint = [&](const RoundRect& r, OverblurPart p) {  // a plain Rect converts: its whole rectangle
    for (int y = std::max(r.y0, 0); y < std::min(r.y1, label.rows); ++y) {
      int a, b;
      r.RowSpan(y, &a, &b);
      a = std::max(a, 0);
      b = std::min(b, label.cols);
      if (a < b) std::memset(label.ptr<uint8_t>(y) + a, int(p), size_t(b - a));
    }
  };
  // On a face: the box's centre lies in an annotated face grown as over-blur grows it (the
  // region over-blur leaves out).
  auto on_face = [&](const MaskOrigin& o) {
    const double cx = 0.5 * (o.core.x0 + o.core.x1), cy = 0.5 * (o.core.y0 + o.core.y1);
    for (const cv::Rect2d& f : faces)
      if (std::abs(cx - (f.x + 0.5 * f.width)) <= (0.5 + kOverblurGrow) * f.width &&
          std::abs(cy - (f.y + 0.5 * f.height)) <= (0.5 + kOverblurGrow) * f.height)
        return true;
    return false;
  };
  auto stray_part = [](const MaskOrigin& o) {
    return !o.confirmed ? OverblurPart::kStrayUnconfirmed
           : o.matched  ? OverblurPart::kStrayMatched
                        : OverblurPart::kStrayCoasting;
  };
  const size_t masks = std::min(rep.origins.size(), rep.rects.size());  // rects[i] is origins[i]'s
  std::vector<char> face(masks);
  for (size_t i = 0; i < masks; ++i) face[i] = on_face(rep.origins[i]);
  // Lowest precedence first: each later part overwrites the earlier ones.
  for (OverblurPart p : {OverblurPart::kStrayCoasting, OverblurPart::kStrayUnconfirmed, OverblurPart::kStrayMatched})
    for (size_t i = 0; i < masks; ++i)
      if (!face[i] && stray_part(rep.origins[i]) == p) paint(rep.rects[i], p);
  for (size_t i = 0; i < masks; ++i)
    if (face[i]) paint(rep.rects[i], OverblurPart::kFaceMargin);
  for (size_t i = 0; i < masks; ++i)
    if (face[i]) paint(rep.origins[i].grown, OverblurPart::kFaceGrowth);
  for (size_t i = 0; i < masks; ++i)
    if (face[i]) paint(rep.origins[i].core, OverblurPart::kFaceBox);
  for (int y = 0; y < destroyed.rows; ++y) {
    const uint8_t* d = destroyed.ptr<uint8_t>(y);
    const uint8_t* l = label.ptr<uint8_t>(y);
    for (int x = 0; x < destroyed.cols; ++x)
      if (d[x]) ++n[l[x]];
  }
  return n;
}

nlohmann::json MotionEvalResult::ToJson() const {
  return {{"frames", frames},
          {"face_frames_ge40", face_frames},
          {"leaked_face_frames", leaked},
          {"leak_rate_all", leak_rate()},
          {"clear_face_frames_ge40", clear_face_frames},
          {"clear_leaked_face_frames", clear_leaked},
          {"leak_rate_clear", clear_leak_rate()},
          {"flicker_all", flicker},
          {"flicker_clear", clear_flicker},
          {"fail_closed_frames", fail_closed_frames},
          {"detections_run", detections_run},
          {"detect_ms_per_frame", ms_detect_per_frame},
          {"track_ms_per_frame", ms_track_per_frame},
          {"mosaic_ms_per_frame", ms_mosaic_per_frame},
          {"pixel", {{"leaked_face_frames", pixel_leaked},
                     {"leak_rate_all", pixel_leak_rate()},
                     {"clear_leaked_face_frames", clear_pixel_leaked},
                     {"leak_rate_clear", clear_pixel_leak_rate()},
                     {"judged_frames", judged_frames},
                     {"overblur_mean", overblur_mean},
                     {"overblur_p90", overblur_p90},
                     {"frames_overblur_gt50", frames_overblur_gt50},
                     {"overblur_parts", Parts(overblur_parts)},
                     {"whole_frame_mosaic_frames", mosaic_frames},
                     {"whole_frame_mosaic_share", mosaic_frame_share()},
                     {"t_ssim", kLeakSsim}}}};
}

Motion MotionAt(int k, int t, int frames, cv::Size photo, cv::Size canvas) {
  // Fit the photo in the canvas, then zoom in or out by up to 15% over the
  // shot, and pan at ~1.6 px/frame with a small handheld wobble.
  const double fit = std::min(double(canvas.width) / photo.width, double(canvas.height) / photo.height);
  const double u = frames > 1 ? double(t) / (frames - 1) : 0.0;
  const double zoom = (k % 2 == 0) ? 1.0 + 0.15 * u : 1.15 - 0.15 * u;
  const double s = fit * zoom;
  const double dir_x = (k % 4 < 2) ? 1.0 : -1.0, dir_y = (k % 3 == 0) ? 1.0 : -1.0;
  const double phase = k * 0.7;
  const double px = dir_x * 1.6 * (t - frames / 2.0) + 3.0 * std::sin(2 * M_PI * t / 17.0 + phase);
  const double py = dir_y * 0.8 * (t - frames / 2.0) + 2.0 * std::sin(2 * M_PI * t / 23.0 + 2 * phase);
  const double tx = (canvas.width - photo.width * s) / 2 + px;
  const double ty = (canvas.height - photo.height * s) / 2 + py;
  return {s, tx, ty};
}

double CoveredFraction(const Box& box, const std::vector<RoundRect>& regions) {
  const int x0 = int(std::floor(box.x)), y0 = int(std::floor(box.y));
  const int x1 = int(std::ceil(box.x2())), y1 = int(std::ceil(box.y2()));
  const int w = x1 - x0, h = y1 - y0;
  if (w <= 0 || h <= 0) return 1.0;
  std::vector<uint8_t> m(size_t(w) * h, 0);
  for (const RoundRect& r : regions) {
    for (int y = std::max(r.y0, y0); y < std::min(r.y1, y1); ++y) {
      int a, b;
      r.RowSpan(y, &a, &b);
      a = std::max(a, x0);
      b = std::min(b, x1);
      if (a < b) std::fill(&m[size_t(y - y0) * w + (a - x0)], &m[size_t(y - y0) * w + (b - x0)], 1);
    }
  }
  size_t n = 0;
  for (uint8_t v : m) n += v;
  return double(n) / m.size();
}

Result<MotionEvalResult> RunMotionEval(const std::vector<GtImage>& images, const PrivacyConfig& cfg, Detector* det,
                                       const MotionEvalOptions& o) {
  if (o.frames_per_photo < 3 || o.frames_per_photo > 3000) return Status::Error("frames per photo in [3, 3000]");
  if (o.canvas.width % 2 || o.canvas.height % 2 || o.canvas.width < 64 || o.canvas.height < 64)
    return Status::Error("canvas must be even and at least 64x64");
  if (o.pixel_every < 1 || o.pixel_every > 1000) return Status::Error("pixel_every in [1, 1000]");
  std::ofstream leaks;
  if (!o.leaks_csv.empty()) {
    leaks.open(o.leaks_csv);
    if (!leaks) return Status::Error("cannot write " + o.leaks_csv);
    leaks << "photo,image,face,frame,min_side,clear,pose,occlusion,blur,covered,visible,x,y,w,h\n";
  }
  PrivacyStage stage(cfg, det);
  MotionEvalResult r;
  FramePtr frame = MakeFrame(o.canvas.width, o.canvas.height);
  cv::Mat canvas, yuv;
  double ms_det = 0, ms_track = 0, ms_mosaic = 0;
  std::vector<double> overblurs;
  int64_t index = 0;
  int photos = 0;
  for (const auto& im : images) {
    if (o.max_photos > 0 && photos >= o.max_photos) break;
    cv::Mat img = cv::imread(im.path, cv::IMREAD_COLOR);
    if (img.empty()) return Status::Error("cannot read image " + im.path);
    // covered[face][t]: -1 = not counted in this frame (too small / out of view).
    std::vector<std::vector<int>> cov(im.faces.size(), std::vector<int>(o.frames_per_photo, -1));
    for (int t = 0; t < o.frames_per_photo; ++t) {
      const Motion mo = MotionAt(photos, t, o.frames_per_photo, img.size(), o.canvas);
      const cv::Matx23d M(mo.s, 0, mo.tx, 0, mo.s, mo.ty);
      cv::warpAffine(img, canvas, M, o.canvas, cv::INTER_LINEAR, cv::BORDER_CONSTANT, cv::Scalar(64, 64, 64));
      cv::cvtColor(canvas, yuv, cv::COLOR_BGR2YUV_I420);
      const int W = o.canvas.width, H = o.canvas.height;
      for (int y = 0; y < H; ++y) std::memcpy(frame->y.row(y), yuv.ptr(y), W);
      for (int y = 0; y < H / 2; ++y) {
        std::memcpy(frame->u.row(y), yuv.ptr(H) + size_t(y) * (W / 2), W / 2);
        std::memcpy(frame->v.row(y), yuv.ptr(H) + size_t(H / 4) * W + size_t(y) * (W / 2), W / 2);
      }
      frame->index = index++;
      frame->pts = frame->index;
      const FrameReport rep = stage.Process(*frame);
      // The lossless rendering's luma (still in yuv) against what the stage wrote in place.
      const cv::Mat master_y = yuv(cv::Rect(0, 0, W, H));
      const cv::Mat out_y(H, W, CV_8UC1, frame->y.data, size_t(frame->y.stride));
      if (frame->index % o.pixel_every == 0) {
        FaceBoxes all_faces;  // every annotated face, for the over-blur exclusion
        for (const GtFace& f : im.faces)
          all_faces.push_back({f.box.x * mo.s + mo.tx, f.box.y * mo.s + mo.ty, f.box.w * mo.s, f.box.h * mo.s});
        const FrameJudgement fj = JudgeFrame(master_y, out_y, all_faces);
        overblurs.push_back(fj.overblur);
        if (fj.judged_pixels > 0) {
          const auto parts = SplitOverblur(fj.destroyed, rep, all_faces);
          for (int k = 0; k < kOverblurParts; ++k) r.overblur_parts[size_t(k)] += double(parts[size_t(k)]) / fj.judged_pixels;
        }
        r.mosaic_frames += fj.whole_frame_mosaic();
        r.frames_overblur_gt50 += fj.overblur > 0.5;
        ++r.judged_frames;
      }
      ms_det += rep.ms_preprocess + rep.ms_detect;
      ms_track += rep.ms_track;
      ms_mosaic += rep.ms_mosaic;
      r.fail_closed_frames += rep.fail_closed;
      ++r.frames;
      for (size_t g = 0; g < im.faces.size(); ++g) {
        const GtFace& f = im.faces[g];
        if (!f.valid() || f.min_side() * mo.s < o.min_face) continue;
        const Box b{float(f.box.x * mo.s + mo.tx), float(f.box.y * mo.s + mo.ty), float(f.box.w * mo.s),
                    float(f.box.h * mo.s)};
        const Box vis{std::max(0.f, b.x), std::max(0.f, b.y), 0, 0};
        const Box clipped{vis.x, vis.y, std::min(b.x2(), float(W)) - vis.x, std::min(b.y2(), float(H)) - vis.y};
        if (clipped.w <= 0 || clipped.h <= 0 || clipped.area() < 0.5f * b.area()) continue;
        const bool ok = CoveredFraction(clipped, rep.rects) >= o.covered;
        const bool visible = BestHalfSsim(master_y, out_y, {b.x, b.y, b.w, b.h}) >= kLeakSsim;
        if ((visible || !ok) && leaks)
          leaks << photos << ',' << im.path << ',' << g << ',' << t << ',' << std::lround(f.min_side() * mo.s) << ','
                << f.clear() << ',' << f.pose << ',' << f.occlusion << ',' << f.blur << ','
                << CoveredFraction(clipped, rep.rects) << ',' << visible << ',' << std::lround(b.x) << ','
                << std::lround(b.y) << ',' << std::lround(b.w) << ',' << std::lround(b.h) << '\n';
        cov[g][t] = ok ? 1 : 0;
        ++r.face_frames;
        r.leaked += !ok;
        r.pixel_leaked += visible;
        if (f.clear()) {
          ++r.clear_face_frames;
          r.clear_leaked += !ok;
          r.clear_pixel_leaked += visible;
        }
      }
    }
    for (size_t g = 0; g < im.faces.size(); ++g) {
      for (int t = 0; t + 2 < o.frames_per_photo; ++t) {
        if (cov[g][t] == 1 && cov[g][t + 1] == 0 && cov[g][t + 2] == 1) {
          ++r.flicker;
          if (im.faces[g].clear()) ++r.clear_flicker;
        }
      }
    }
    ++photos;
  }
  r.detections_run = stage.counters().detections_run;
  if (!overblurs.empty()) {
    double sum = 0;
    for (double v : overblurs) sum += v;
    r.overblur_mean = sum / overblurs.size();
    for (double& p : r.overblur_parts) p /= double(overblurs.size());
    std::sort(overblurs.begin(), overblurs.end());
    // numpy's default percentile: linear between the two nearest ranks.
    const double pos = 0.9 * (overblurs.size() - 1);
    const size_t lo = size_t(pos);
    const size_t hi = std::min(lo + 1, overblurs.size() - 1);
    r.overblur_p90 = overblurs[lo] + (pos - lo) * (overblurs[hi] - overblurs[lo]);
  }
  if (r.frames) {
    r.ms_detect_per_frame = ms_det / r.frames;
    r.ms_track_per_frame = ms_track / r.frames;
    r.ms_mosaic_per_frame = ms_mosaic / r.frames;
  }
  return r;
}

}  // namespace veil
