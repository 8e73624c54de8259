// Where in a period each session's periodic work falls, so that the sessions of a node do not all
// do it on the same frame (issue 12 item 1). Two uses (server/session_manager.cpp):
//  - keyframes: a VP8 keyframe at the default speed costs ~1.7x an inter frame (docs/figures.md
//    "what a keyframe costs"); sessions started together (a load test, a reconnecting fleet,
//    viewers joining at once) would otherwise put theirs on the same frame every period, and at
//    2 s x 30 fps that is 1.7% of frames: the p99;
//  - detections: each session asks for one every privacy.detect_every frames; spread, the one
//    inference thread takes them one at a time through the period instead of as a burst that
//    holds a core while every session's frames wait for the other.
#pragma once
#include <cstdint>
#include <map>

#include "core/mutex.h"

namespace veil {

class PeriodPhases {
 public:
  explicit PeriodPhases(double period_ms) : period_ms_(period_ms) {}
  // A phase in [0, period) for session `id`: the middle of the widest gap between the phases
  // taken (0 for the first). Taking an id again gives its phase back unchanged.
  double Take(uint64_t id);
  void Release(uint64_t id);
  double period_ms() const { return period_ms_; }
  // The first time at or after `now_ms` that is `phase_ms` into a period counted from `epoch_ms`.
  static double NextAt(double now_ms, double epoch_ms, double phase_ms, double period_ms);

 private:
  const double period_ms_;
  Mutex mu_;
  std::map<uint64_t, double> taken_ GUARDED_BY(mu_);
};

}  // namespace veil
