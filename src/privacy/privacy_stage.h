// The privacy stage: decides per frame what gets pixelated.
//   anonymize: detect on a small copy every N frames (or at scene cuts),
//              track between detections, mosaic every track's mask;
//   bypass:    nothing is touched;
//   full_blur: the whole frame is pixelated.
// Fail-closed: a frame whose detection result is missing, failed or older
// than max_result_age_ms leaves as a whole-frame mosaic, and is counted.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include <condition_variable>
#include <memory>
#include <mutex>

#include "core/frame.h"
#include "core/status.h"
#include "inference/scheduler.h"
#include "vision/detector.h"
#include "vision/mosaic.h"
#include "vision/preprocess.h"
#include "vision/tracker.h"

namespace veil {

enum class Mode { kAnonymize, kBypass, kFullBlur };
Result<Mode> ParseMode(const std::string& s);
std::string ModeName(Mode m);

struct PrivacyConfig {
  Mode mode = Mode::kAnonymize;
  cv::Size detect_box{640, 360};   // detection copy fits in this box, aspect preserved
  bool detect_trim = false;        // the detector sees the copy trimmed to its 32-px grid (vision/preprocess.h DetectWindow)
  int detect_every = 3;            // run detection every N frames; 0 = auto (by detect_budget_ms)
  double detect_budget_ms = 5.0;   // auto cadence: detection cost per frame to aim for
  int max_auto_every = 6;
  double max_result_age_ms = 200;  // older detection result -> fail-closed frame
  double fps = 30;                 // to convert frame ages to time
  bool scene_cut = true;           // a scene cut forces detection on that frame
  double scene_cut_threshold = 28; // mean abs luma difference of 32x18 thumbnails
  // Live only: a frame that would leave as a whole-frame mosaic only because its own detection is
  // still running (a scene cut, a session's first frame) waits up to this long for it. 0: no wait.
  double cut_wait_ms = 0;
  // Live only: such a frame leaves as the session's previous output (already anonymized, the
  // old shot for one more frame) instead of a whole-frame mosaic, for at most this many frames
  // in a row (server/live_session.h MayHoldPrevious). 0: never.
  int cut_hold_frames = 2;
  // Live only: a detection on the cadence (a frame already has fresh masks) lets the frames due
  // sooner go first on the frame executor for this long, ms (DetectRequest::slack_ms): its
  // result may come back later and the tracker carries the masks meanwhile. A detection that
  // nothing else describes the picture without (the first frame, a scene cut, after a failed
  // one) has none. Below max_result_age_ms / 2, the request's own deadline. 0: none.
  double detect_slack_ms = 0;
  MosaicParams mosaic;
  TrackerParams tracker;
};

Status Validate(const PrivacyConfig& c);

// One per face mask a frame got, in the order of FrameReport::rects: the parts of the mask, so
// that `veil eval` can say which part destroyed background (eval/motion_eval.h).
struct MaskOrigin {
  Rect core;     // the track's predicted box, before growth and margin
  Rect grown;    // grown by the motion bound, before the margin
  bool matched = false;    // the newest detection matched this track (it is not coasting without its face)
  bool confirmed = false;  // born from a high score, or matched again since (not a lone low-score detection)
};

struct FrameReport {
  bool detected = false;      // detection ran on this frame
  bool fail_closed = false;   // whole frame pixelated for lack of a fresh result
  // Live: fail-closed only because nothing describes this picture yet and its detection is on
  // its way (a scene cut, a session's first frames): not a failed or stalled AI path.
  bool awaiting_shot = false;
  bool scene_cut = false;
  int masks = 0;
  std::vector<RoundRect> rects;  // pixelated regions (whole frame when fail-closed/full_blur)
  std::vector<MaskOrigin> origins;  // one per rect of a face mask (none when fail-closed/full_blur)
  // ms_detect: sync, the detector's time on this frame; async, submit ->
  // result of the detection applied on this frame (-1 when none arrived).
  double ms_preprocess = 0, ms_detect = 0, ms_track = 0, ms_mosaic = 0;
  double ms_wait = 0;  // live: waited for this frame's own detection (cut_wait_ms)
};

struct PrivacyCounters {
  int64_t frames = 0, detections_run = 0, detect_failures = 0, fail_closed = 0, scene_cuts = 0;
  int64_t results_dropped = 0;  // async: stale or superseded in the scheduler
  int64_t resolution_changes = 0;  // the picture size changed: tracks dropped, treated as a scene cut
  int64_t doubtful_detections = 0;  // detections the second look doubted (vision/second_look.h)
  int64_t cut_waits = 0;            // live: frames that waited for their own detection (cut_wait_ms)
  int64_t cut_wait_timeouts = 0;    // ... and whose detection did not come back in time
};

class PrivacyStage {
 public:
  // Synchronous detection (offline jobs): the frame waits for its detection.
  // `detector` may be null only when the mode never needs it (it is then
  // fail-closed if switched to anonymize). Not owned.
  PrivacyStage(const PrivacyConfig& c, Detector* detector);
  // Asynchronous detection (live sessions): the small copy is submitted to a
  // shared scheduler and frames keep flowing; results are applied to the
  // tracker when they arrive. Until a first result, after a failed one, and
  // whenever the newest result is older than max_result_age_ms, frames fail
  // closed. `scheduler` is not owned and must outlive the stage's use of it.
  PrivacyStage(const PrivacyConfig& c, DetectionSink* scheduler, uint64_t session);
  FrameReport Process(Frame& f);
  void set_mode(Mode m) { cfg_.mode = m; }
  Mode mode() const { return cfg_.mode; }
  const PrivacyCounters& counters() const { return counters_; }
  int current_every() const { return every_ + extra_every_; }
  // Load shedding (server/speed_control.h): detect this many frames less often than configured,
  // clamped to max_extra_every(). Fixed cadence only; auto cadence has its own.
  void set_extra_every(int k);
  // Frames of cadence that can be shed while a result may still come back half the privacy
  // bound (max_result_age_ms) late without the frame before the next detection failing closed.
  int max_extra_every() const;
  // Load shedding, the step before cadence: the detector is shown the copy trimmed to its grid
  // (vision/preprocess.h DetectWindow) even though detect_trim is off. trim_steps(): 1 when that
  // changes what a frame of this size shows the detector, 0 when it does not (or trims already).
  void set_shed_trim(bool on) { shed_trim_ = on; }
  // Live: the frames whose index plus `offset` is a multiple of the cadence (current_every())
  // are this session's detection slots (server/period_phases.h): a detection runs on each, as
  // well as at a scene cut and whenever the cadence's count runs out since the last one (so a
  // cut costs at most one extra detection, and the next slot brings the cadence back in line).
  // Negative: no slots, the count alone.
  void set_detect_slot(int64_t offset) { slot_offset_ = offset; }
  int trim_steps(int width, int height) const;
  bool trimming() const { return cfg_.detect_trim || shed_trim_; }

 private:
  bool SceneCut(const Frame& f);
  bool DetectNow(const Frame& f, FrameReport& r);  // sync: true on failure
  void Submit(const Frame& f, FrameReport& r);     // async
  // Async: a kept detection copy no request holds any more, or null when every one is held.
  cv::Mat* RequestBuffer();
  void ApplyResults(const Frame& f, FrameReport& r);
  // `window`: the part of the detection copy the detector was shown (DetectWindow).
  void UpdateTracker(const Detections& small_dets, const Frame& f, int64_t detected_frame, const cv::Rect& window);
  // Results delivered by scheduler threads; shared so a late callback after
  // the stage is gone still has somewhere to write.
  struct Mailbox {
    struct Entry {
      DetectResult result;
      cv::Rect window;  // what the request showed the detector
    };
    std::mutex mu;
    std::condition_variable arrived;  // a result was added
    std::vector<Entry> results;       // guarded by mu
  };
  // Live: blocks until a result for frame `index` or later is in the mailbox, at most `ms`;
  // whether one came.
  bool WaitForResult(int64_t index, double ms);
  PrivacyConfig cfg_;
  Detector* det_ = nullptr;
  DetectionSink* sched_ = nullptr;
  uint64_t session_ = 0;
  std::shared_ptr<Mailbox> mailbox_ = std::make_shared<Mailbox>();
  bool failing_ = false;  // async: the newest result was a failure
  int64_t min_result_frame_ = 0;  // async: results of frames before the last scene cut describe another shot
  Tracker tracker_;
  PrivacyCounters counters_;
  cv::Mat small_;
  // Async: the detection copies handed to the scheduler, reused once it lets them go. A fresh
  // 640x360 BGR copy per request page-faulted its ~170 pages on every detection (2% of a live
  // session's CPU on this VM, docs/figures.md). A session has one request waiting and one in
  // flight at most, so three are enough.
  static constexpr int kRequestBuffers = 3;
  std::array<cv::Mat, kRequestBuffers> request_bufs_;
  int64_t last_result_frame_ = -1;  // frame index of the last successful detection
  int64_t frames_since_detect_ = int64_t(1) << 40;  // "long ago": the first frame is due
  int every_ = 1;
  int extra_every_ = 0;
  bool shed_trim_ = false;
  int64_t slot_offset_ = -1;
  int last_w_ = 0, last_h_ = 0;  // the previous frame's size
  double detect_ms_ema_ = 0;
  bool have_thumb_ = false;
  LumaThumb thumb_;
};

}  // namespace veil
