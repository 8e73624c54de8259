// Load shedding inside one session, in the manner of libwebrtc's CPU overuse detector: each
// window (1 s) the session's worker reports how late its frames left (decoded -> encoded, wall
// clock, so a CPU that other work takes shows as it does to the viewer) and how many it dropped
// as stale. When the frame budget is threatened the session sheds one level; after a calm
// stretch it takes one back. The levels are, in this order (docs/capacity.md):
//   1 .. E       the encoder's speed steps (libvpx cpu-used, x264 preset), cheapest last;
//   E+1          (where it changes the window) the detector shown its copy trimmed to its grid;
//   E+T+1 .. E+T+C  detection every frame more, up to what the privacy bound allows
//                (privacy.max_result_age_ms: a result may still be half the bound late);
// Frame rate and privacy are not levels: frames are only dropped when they are already stale,
// and fail-closed stays as it is. A session at its last level that still overuses is
// overloaded(); the node then refuses new viewers, and last ends its newest session
// (SessionManager).
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

namespace veil {

struct SpeedControlConfig {
  bool enabled = true;        // false: the configured speed and cadence, always
  double window_ms = 1000;    // judged once per window
  double high = 0.7;          // overuse: the window's p90 latency above high x budget, ...
  double stale_share = 0.05;  // ... or more than this share of its frames dropped as stale
  double low = 0.4;           // headroom: p90 under low x budget and nothing stale
  // ... or, while the node has room (set_node_room: its CPU in the last second left room in
  // its budget for one more session), p90 under low_with_room x budget. A lone 720p session's own work takes 0.4-0.5 of
  // the frame interval on a 2-core VM, so under `low` alone a level it took for a passing load
  // (another process, a slow spell) was never given back. low_with_room <= low: no such rule; at or over high: any window not over.
  double low_with_room = 0.55;
  double calm_ms = 5000;      // headroom this long before one level back
  double calm_max_ms = 40000; // a level taken back that overused again within calm_max_ms doubles calm (up to this)
  // Windows that end within this long of the session's first frame are not judged: a session's
  // first frames (the first keyframe, the first detection, the jitter buffer's first burst) are
  // late by themselves, and a level taken for them stayed for 10 s and more at one session.
  // libwebrtc's overuse detector skips its first checks the same way (min_process_count).
  double warmup_ms = 3000;
  // A window is judged before its end once what it holds already decides that its frames fail
  // the budget: enough of them later than the whole budget (or dropped stale) that the p90 (or
  // the stale share) of a window as long as the last full one is past it whatever comes after
  // them. The verdict is the one the window would give at its end (over); it comes when the
  // evidence is in, not up to window_ms later: a burst of late frames (sessions' frames coming to
  // arrive at the same instants, a slow spell of the machine) is answered within a fraction of a
  // second. Frames late against high x budget but in time wait for the window's end as before,
  // so a load that passes is not shed faster. At least min_early_ms into the window.
  bool judge_early = false;
  double min_early_ms = 250;
};

Status Validate(const SpeedControlConfig& c);

class SpeedControl {
 public:
  SpeedControl(const SpeedControlConfig& c, double budget_ms, int max_level);
  // The session's worker, per frame: a frame that left after latency_ms, or one dropped stale.
  void OnFrame(double now_ms, double latency_ms);
  void OnStale(double now_ms);
  // Judges the window when it is over; the level to run at now (0 = as configured).
  int Level(double now_ms);
  int level() const { return level_; }
  int max_level() const { return max_level_; }
  void set_max_level(int m);  // a new encoder (another codec or size) can have other steps
  // A level to start at, from the node's load (SessionManager::StartLevel): taken while the
  // session is still in its warm-up (no window judged yet), never lowering the level, up to
  // max_level (one set later by set_max_level is applied then); calm windows take it back like
  // any other. Returns whether it was taken (false once a window was judged).
  bool StartAt(int level);
  // Whether the node had room in its last second (SessionManager's housekeeping): windows are
  // then calm under low_with_room, not only under low.
  void set_node_room(bool room) { room_ = room; }
  // Asked before a calm stretch takes a level back (TakeBackBudget, server.shed_take_back_in_budget);
  // false: the level stays and the next calm window asks again. None set: always granted.
  void set_take_back_permit(std::function<bool(double now_ms)> permit) { permit_ = std::move(permit); }
  uint64_t take_backs_held() const { return held_; }  // take-backs the permit refused
  int start_level() const { return start_; }
  // No window judged yet (the session's first frames, or its warm-up).
  bool warming_up() const { return !judged_; }
  // The last judged window overused at the last level: nothing left to shed in the session.
  bool overloaded() const { return overloaded_; }
  // The same, and its frames fell behind: more than stale_share of them dropped as stale, or its
  // p90 later than the whole budget. Only this threatens the frame rate; a p90 between high x
  // budget and the budget (frames that waited behind other sessions' frames arriving at the same
  // instants) does not, and it is what the node's last resort, ending a session, waits for.
  bool falling_behind() const { return behind_; }
  double current_calm_ms() const { return calm_need_ms_; }
  uint64_t steps_up() const { return ups_; }
  uint64_t warmup_windows() const { return warmup_windows_; }  // windows left unjudged
  uint64_t steps_down() const { return downs_; }
  uint64_t early_verdicts() const { return early_; }  // windows judged before their end (judge_early)

 private:
  void Judge(double now_ms);
  // The window so far already decides an overuse verdict (judge_early).
  bool DecidedEarly(double now_ms) const;

  const SpeedControlConfig cfg_;
  const double budget_ms_;
  int max_level_;
  int level_ = 0;
  int start_ = 0;        // StartAt's level (0: none)
  bool judged_ = false;  // a window past the warm-up was judged
  bool overloaded_ = false;
  bool behind_ = false;
  bool room_ = false;
  std::function<bool(double)> permit_;
  double window_start_ = -1;
  double first_ms_ = -1;       // the first frame (or stale drop) seen
  std::vector<double> lat_;
  int stale_ = 0;
  int late_ = 0;         // frames of the window later than the budget
  size_t last_full_ = 0; // frames and stale drops of the last window judged at its end
  double calm_since_ = -1;     // start of the current run of calm windows
  double calm_need_ms_;
  double last_down_ms_ = -1e18;
  uint64_t ups_ = 0, downs_ = 0, warmup_windows_ = 0, held_ = 0, early_ = 0;
};

// The node's budget, shared by its sessions' take-backs (server.shed_take_back_in_budget).
// Sessions on one node grow calm together (a fast stretch of the machine is calm for all of
// them) and took their levels back within half a second of each other; the node then ran past
// its cores and every session shed again, with a burst of late frames between (docs/capacity.md,
// "Taking levels back within the node's budget"). Here a session whose calm stretch would take a
// level back asks first, with what the level adds (ms of CPU a second); it is granted while the
// process's CPU in the last measured second, plus what was granted since that second began (the
// reading does not hold it yet), plus this one, fits in the node's budget (the cores x
// server.cpu_share, what admission plans with). Before the first reading every one is granted.
class TakeBackBudget {
 public:
  // SessionManager's housekeeping, once a second: the process's CPU over the second that began
  // at since_ms, and the budget. Grants made before since_ms are in the reading and are dropped.
  void Update(double since_ms, double cpu_ms_per_s, double budget_ms_per_s);
  // A session's take-back that adds cost_ms_per_s: granted (and reserved) or not.
  bool TryTake(double now_ms, double cost_ms_per_s);
  uint64_t granted() const;
  uint64_t held() const;

 private:
  mutable Mutex mu_;
  double cpu_ GUARDED_BY(mu_) = -1;  // ms/s; < 0: no reading yet
  double budget_ GUARDED_BY(mu_) = 0;
  std::deque<std::pair<double, double>> grants_ GUARDED_BY(mu_);  // (when, ms/s) not in cpu_ yet
  uint64_t granted_ GUARDED_BY(mu_) = 0, held_ GUARDED_BY(mu_) = 0;
};

// What taking one shed level back adds, as a share of the session's own CPU: an encoder speed
// step on the VP8 ladder costs 0.8-1.2 ms of an encode's 9.4 and a session's ~11 ms a frame
// (docs/figures.md, "static threshold steps"), a detection-cadence level ~0.65 ms (YuNet at
// ~7.8 ms a detection, every 3rd frame against every 4th). Over-counting holds a take-back a
// second longer; under-counting lets two through where one fits.
constexpr double kShedLevelCostShare = 0.12;

}  // namespace veil
