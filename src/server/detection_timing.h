// What a session's detections cost this node, for the cost model's priors (server/capacity.h):
// the anonymize priors were learned with the default detector (YuNet 2023mar at 640x360, every
// 3rd frame). A node configured with another model, a bigger detection copy or a denser
// cadence pays a different detection cost from its first session on (the field report's
// "bigger model"); StartCapacity times both detections at startup and adds the difference to
// the anonymize prior per 720p frame, until the sessions' own CPU replaces the prior.
#pragma once
#include "core/status.h"
#include "privacy/privacy_stage.h"
#include "vision/detector.h"

namespace veil {

// A detection pass's CPU spread over the frames of its cadence: pass_ms / detect_every; with
// the auto cadence (detect_every 0), the cadence its budget gives that pass (as the privacy
// stage sets it: ceil(pass / detect_budget_ms), held to [1, max_auto_every]).
double DetectionMsPerFrame(double pass_ms, const PrivacyConfig& p);

// CPU ms of one detection pass on this machine: the detector `dc` on a 720p frame's detection
// copy (privacy's detect_box, trimmed as privacy.detect_trim says), a camera-like synthetic
// picture; the cheapest of `passes` passes after one warm-up pass (a burst of other work only
// ever adds time). Process CPU, so a detector's own threads count.
Result<double> TimeDetectionPassMs(const DetectorConfig& dc, const PrivacyConfig& p, int passes = 5);

// Whether two settings give the same detection work (model, engine, threads, copy, cadence).
bool SameDetectionWork(const DetectorConfig& a, const PrivacyConfig& pa, const DetectorConfig& b,
                       const PrivacyConfig& pb);

// The configured detection's CPU per 720p frame less the default's (Settings{}), both timed now;
// 0 without timing when the work is the same. Negative when the configured one is cheaper.
struct DetectionExtra {
  double extra_ms = 0;                         // per 720p frame
  double configured_ms = 0, default_ms = 0;    // per frame, each (0: not timed)
};
Result<DetectionExtra> MeasureDetectionExtra(const DetectorConfig& dc, const PrivacyConfig& p);

}  // namespace veil
