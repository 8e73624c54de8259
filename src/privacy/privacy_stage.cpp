#include "privacy/privacy_stage.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "core/clock.h"

namespace veil {

Result<Mode> ParseMode(const std::string& s) {
  if (s == "anonymize") return Mode::kAnonymize;
  if (s == "bypass") return Mode::kBypass;
  if (s == "full_blur") return Mode::kFullBlur;
  return Status::Error("mode must be anonymize, bypass or full_blur, got '" + s + "'");
}

std::string ModeName(Mode m) {
  switch (m) {
    case Mode::kAnonymize: return "anonymize";
    case Mode::kBypass: return "bypass";
    case Mode::kFullBlur: return "full_blur";
  }
  return "?";
}

Status Validate(const PrivacyConfig& c) {
  if (c.detect_box.width < 32 || c.detect_box.height < 32 || c.detect_box.width > 4096 ||
      c.detect_box.height > 4096)
    return Status::Error("detect size must be between 32x32 and 4096x4096");
  if (c.detect_every < 0 || c.detect_every > 120) return Status::Error("detect_every must be in [0 (auto), 120]");
  if (!(c.detect_budget_ms > 0 && c.detect_budget_ms < 1000)) return Status::Error("detect budget must be in (0, 1000) ms");
  if (c.max_auto_every < 1 || c.max_auto_every > 120) return Status::Error("max_auto_every must be in [1, 120]");
  if (!(c.max_result_age_ms > 0 && c.max_result_age_ms <= 10000))
    return Status::Error("max_result_age_ms must be in (0, 10000]");
  if (!(c.fps > 0 && c.fps <= 1000)) return Status::Error("fps must be in (0, 1000]");
  if (!(c.scene_cut_threshold > 0 && c.scene_cut_threshold < 255)) return Status::Error("scene_cut_threshold in (0, 255)");
  if (!(c.cut_wait_ms >= 0 && c.cut_wait_ms <= 1000)) return Status::Error("cut_wait_ms must be in [0, 1000]");
  if (c.cut_hold_frames < 0 || c.cut_hold_frames > 30) return Status::Error("cut_hold_frames must be in [0, 30]");
  if (!(c.detect_slack_ms >= 0 && c.detect_slack_ms < c.max_result_age_ms / 2))
    return Status::Error("detect_slack_ms must be in [0, max_result_age_ms / 2), got " + std::to_string(c.detect_slack_ms));
  const int every = c.detect_every == 0 ? c.max_auto_every : c.detect_every;
  if ((every - 1) * 1000.0 / c.fps >= c.max_result_age_ms)
    return Status::Error("detection every " + std::to_string(every) + " frames at " + std::to_string(c.fps) +
                         " fps is older than max_result_age_ms between detections: every frame would fail closed");
  if (Status s = Validate(c.mosaic); !s) return s;
  return Validate(c.tracker);
}

PrivacyStage::PrivacyStage(const PrivacyConfig& c, Detector* d)
    : cfg_(c), det_(d), tracker_(c.tracker), every_(c.detect_every > 0 ? c.detect_every : 1) {}

PrivacyStage::PrivacyStage(const PrivacyConfig& c, DetectionSink* scheduler, uint64_t session)
    : cfg_(c), sched_(scheduler), session_(session), tracker_(c.tracker),
      every_(c.detect_every > 0 ? c.detect_every : 1) {}

void PrivacyStage::UpdateTracker(const Detections& small_dets, const Frame& f, int64_t detected_frame,
                                 const cv::Rect& window) {
  const cv::Size small = FitSize(f.width, f.height, cfg_.detect_box);
  const float sx = float(f.width) / small.width, sy = float(f.height) / small.height;
  Detections full;
  full.reserve(small_dets.size());
  for (const auto& d : small_dets) {
    full.push_back({FromWindow(d.box, window, small).Scaled(sx, sy), d.score, d.doubtful});
    counters_.doubtful_detections += d.doubtful ? 1 : 0;
  }
  // A live result describes an earlier frame: its masks grow from that frame on.
  tracker_.Update(full, int(std::clamp<int64_t>(f.index - detected_frame, 0, 1000)));
}

int PrivacyStage::trim_steps(int width, int height) const {
  if (cfg_.detect_trim || width <= 0 || height <= 0) return 0;
  const cv::Size small = FitSize(width, height, cfg_.detect_box);
  return DetectWindow(small, true) != DetectWindow(small, false) ? 1 : 0;
}

int PrivacyStage::max_extra_every() const {
  if (cfg_.detect_every <= 0) return 0;
  const int most = int(std::floor(cfg_.max_result_age_ms / 2 * cfg_.fps / 1000.0)) + 1;
  return std::max(0, most - cfg_.detect_every);
}

void PrivacyStage::set_extra_every(int k) { extra_every_ = std::clamp(k, 0, max_extra_every()); }

bool PrivacyStage::DetectNow(const Frame& f, FrameReport& r) {
  if (!det_) return true;
  double t0 = NowMs();
  const cv::Size small = FitSize(f.width, f.height, cfg_.detect_box);
  DownscaleToBgr(f, small, small_);
  const double t1 = NowMs();
  r.ms_preprocess = t1 - t0;
  const cv::Rect window = DetectWindow(small, trimming());
  auto res = det_->Detect({small_(window)}, cfg_.tracker.low_score);
  const double t2 = NowMs();
  r.ms_detect = t2 - t1;
  const double cost = r.ms_preprocess + r.ms_detect;
  detect_ms_ema_ = detect_ms_ema_ == 0 ? cost : 0.9 * detect_ms_ema_ + 0.1 * cost;
  if (cfg_.detect_every == 0)
    every_ = std::clamp(int(std::ceil(detect_ms_ema_ / cfg_.detect_budget_ms)), 1, cfg_.max_auto_every);
  if (!res || res->size() != 1) return true;
  UpdateTracker(res->front(), f, f.index, window);
  last_result_frame_ = f.index;
  r.ms_track += NowMs() - t2;
  return false;
}

cv::Mat* PrivacyStage::RequestBuffer() {
  for (cv::Mat& m : request_bufs_) {
    // Only this stage holds it: whoever held it last (a scheduler thread) dropped its reference
    // with OpenCV's acquire-release decrement, so its reads of the pixels are over.
    if (m.empty() || std::atomic_ref<int>(m.u->refcount).load(std::memory_order_acquire) == 1) return &m;
  }
  return nullptr;
}

void PrivacyStage::Submit(const Frame& f, FrameReport& r) {
  const double t0 = NowMs();
  DetectRequest q;
  q.session = session_;
  q.frame_index = f.index;
  const cv::Size small = FitSize(f.width, f.height, cfg_.detect_box);
  cv::Mat fresh;  // every kept copy still held: a new one, owned by the request alone
  cv::Mat* pooled = RequestBuffer();
  cv::Mat& copy = pooled ? *pooled : fresh;
  DownscaleToBgr(f, small, copy);
  // The window goes with the request: trimming can be switched (load shedding) before it is back.
  const cv::Rect window = DetectWindow(small, trimming());
  q.image = copy(window);  // a view: the request holds the copy until it is done with it
  q.score_threshold = cfg_.tracker.low_score;
  // A result that starts later than this could only arrive too old to use.
  q.deadline_ms = NowMs() + cfg_.max_result_age_ms / 2;
  // Frames that already have fresh masks can wait for this one's; a picture nothing describes yet cannot.
  q.slack_ms = (last_result_frame_ < 0 || failing_) ? 0 : cfg_.detect_slack_ms;
  q.done = [box = mailbox_, window](DetectResult&& res) {
    {
      std::lock_guard lk(box->mu);
      box->results.push_back({std::move(res), window});
    }
    box->arrived.notify_all();
  };
  r.ms_preprocess = NowMs() - t0;
  sched_->Submit(std::move(q));
}

bool PrivacyStage::WaitForResult(int64_t index, double ms) {
  std::unique_lock lk(mailbox_->mu);
  return mailbox_->arrived.wait_for(lk, std::chrono::microseconds(int64_t(ms * 1000)), [&] {
    return std::any_of(mailbox_->results.begin(), mailbox_->results.end(),
                       [&](const Mailbox::Entry& e) { return e.result.frame_index >= index; });
  });
}

void PrivacyStage::ApplyResults(const Frame& f, FrameReport& r) {
  std::vector<Mailbox::Entry> got;
  {
    std::lock_guard lk(mailbox_->mu);
    got.swap(mailbox_->results);
  }
  const double t0 = NowMs();
  r.ms_detect = -1;
  for (auto& [res, window] : got) {
    switch (res.outcome) {
      case DetectOutcome::kOk:
        if (res.frame_index > last_result_frame_ && res.frame_index >= min_result_frame_) {
          UpdateTracker(res.detections, f, res.frame_index, window);
          last_result_frame_ = res.frame_index;
          failing_ = false;
          r.ms_detect = res.queue_ms + res.infer_ms;
        }
        break;
      case DetectOutcome::kStale:
      case DetectOutcome::kSuperseded:
        ++counters_.results_dropped;
        break;
      case DetectOutcome::kFailed:
      case DetectOutcome::kShutdown:
        ++counters_.detect_failures;
        failing_ = true;
        frames_since_detect_ = every_;  // ask again at once
        break;
    }
  }
  r.ms_track += NowMs() - t0;
}

bool PrivacyStage::SceneCut(const Frame& f) {
  const LumaThumb t = LumaThumb::Of(f);
  const bool cut = have_thumb_ && t.MeanAbsDiff(thumb_) > cfg_.scene_cut_threshold;
  thumb_ = t;
  have_thumb_ = true;
  return cut;
}

FrameReport PrivacyStage::Process(Frame& f) {
  FrameReport r;
  ++counters_.frames;
  const RoundRect whole(Rect{0, 0, f.width, f.height});
  if (cfg_.mode == Mode::kBypass) return r;
  if (cfg_.mode == Mode::kFullBlur) {
    double t0 = NowMs();
    MosaicFullFrame(f, cfg_.mosaic.full_frame_cell);
    r.ms_mosaic = NowMs() - t0;
    r.rects.push_back(whole);
    return r;
  }

  double t0 = NowMs();
  // A new picture size (a publisher that changed resolution): every track is in
  // the old geometry. Start over as at a scene cut, whatever scene_cut says.
  const bool resized = last_w_ > 0 && (f.width != last_w_ || f.height != last_h_);
  last_w_ = f.width;
  last_h_ = f.height;
  if (resized) {
    tracker_.Reset();
    ++counters_.resolution_changes;
  }
  tracker_.Predict();
  r.ms_track = NowMs() - t0;
  ++frames_since_detect_;
  r.scene_cut = (cfg_.scene_cut && SceneCut(f)) || resized;
  if (r.scene_cut) {
    ++counters_.scene_cuts;
    tracker_.MarkShotChange();
    if (sched_) {
      // Live: what we know describes the previous shot. Fail closed until the
      // detection of this frame (submitted below) comes back.
      last_result_frame_ = -1;
      min_result_frame_ = f.index;
    }
  }
  if (sched_) ApplyResults(f, r);
  const int cadence = every_ + extra_every_;
  const bool slot = slot_offset_ >= 0 && (f.index + slot_offset_) % cadence == 0;
  const bool due = frames_since_detect_ >= cadence || r.scene_cut || slot;  // the first frame is always due
  bool failed = false;
  if (due) {
    frames_since_detect_ = 0;
    r.detected = true;
    ++counters_.detections_run;
    if (sched_) {
      Submit(f, r);
    } else if ((failed = DetectNow(f, r))) {
      ++counters_.detect_failures;
      frames_since_detect_ = every_;  // retry on the next frame
    }
  }
  if (sched_ && r.detected && last_result_frame_ < 0 && cfg_.cut_wait_ms > 0) {
    // Nothing describes this picture yet (a cut, the first frame) and its detection is on its
    // way: a short wait shows it with its masks instead of as a whole-frame mosaic.
    const double w0 = NowMs();
    ++counters_.cut_waits;
    if (!WaitForResult(f.index, cfg_.cut_wait_ms)) ++counters_.cut_wait_timeouts;
    r.ms_wait = NowMs() - w0;
    const double applied_ms = r.ms_detect;  // a result applied before the wait, if any
    ApplyResults(f, r);
    if (r.ms_detect < 0) r.ms_detect = applied_ms;
  }
  failed = failed || (sched_ && failing_);
  const double age_ms = last_result_frame_ < 0 ? 1e18 : (f.index - last_result_frame_) * 1000.0 / cfg_.fps;
  t0 = NowMs();
  if (failed || age_ms > cfg_.max_result_age_ms) {
    r.fail_closed = true;
    r.awaiting_shot = !failed && sched_ && last_result_frame_ < 0;
    ++counters_.fail_closed;
    MosaicFullFrame(f, cfg_.mosaic.full_frame_cell);
    r.rects.push_back(whole);
  } else {
    const float px_per_detect_px = float(f.width) / FitSize(f.width, f.height, cfg_.detect_box).width;
    for (const Mask& m : tracker_.Masks(f.width, f.height)) {
      const RoundRect rect = RoundMaskFor(m.core, m.box, cfg_.mosaic, px_per_detect_px, f.width, f.height);
      if (rect.empty()) continue;
      MosaicShape(f, rect, CellSizeFor(m.face_w, cfg_.mosaic));
      r.rects.push_back(rect);
      // A track the newest detection matched has coasted no longer than the frames since it ran.
      r.origins.push_back({MosaicRectFor(m.core, f.width, f.height), MosaicRectFor(m.box, f.width, f.height),
                           m.coast <= frames_since_detect_, m.confirmed});
    }
    r.masks = int(r.rects.size());
  }
  r.ms_mosaic = NowMs() - t0;
  return r;
}

}  // namespace veil
