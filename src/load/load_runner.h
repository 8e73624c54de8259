// veil load: drives a running `veil serve` (or a cluster through one entry URL: sessions
// follow the 307 to the node that takes them, figures per node and in total) with N live sessions per stage
// (paced RTP from a file, looping, keyframes staggered across sessions, one
// recording-free viewer each) and measures what the field report measured by
// hand: received FPS, end-to-end latency (frames matched by RTP timestamp,
// which the server preserves), the server's processing latency and per-stage
// breakdown (from /metrics deltas over the measured window), stale drops,
// fail-closed frames, RTP loss, and CPU of the server and of the tool itself.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace veil {

struct LoadOptions {
  std::string server = "http://127.0.0.1:8080", token, input, mode;  // mode "": the server's default
  std::vector<int> stages = {2, 4, 8, 12};
  double stage_seconds = 40, warmup_seconds = 5;
  bool all_stages = false, force = false;
  double pass_fps = 25, pass_p99_ms = 33.3;  // the field report's pass mark
  std::string label;                          // names the configuration in tables
  double page_poll_ms = 0;  // > 0: poll like an open operator page (load/page_poller.h) every this many ms
  // A stage the server refuses in part (HTTP 503 before any media) runs with the sessions it
  // admitted; the rest are still offered, each must be refused too; the run ends after it.
  // false: a refusal stops the run there.
  bool run_admitted = false;
  // The sessions' frame phases to one another (their keyframes are staggered over a GOP in every
  // case). "created": each publisher starts its stagger when its session is created, so the
  // phases fall where the creation calls' durations put them (the behaviour before 2026-12-05:
  // one draw of the phases per run).
  // "aligned": every session's frames arrive at the same instants, the worst case for a node's
  // queue (2 cores, 4 sessions: two frames wait a whole frame's work). "spread": evenly over one
  // frame interval, the best case. Independent publishers have independent clocks, so a real
  // node sees phases anywhere between, drifting. "drift": spread at the start, and each
  // publisher's clock a little off from its neighbour's, so that neighbours drift a whole frame
  // interval apart over the measured window: the stage's figures are over every phase, as a
  // long-running node's are.
  std::string frame_phase = "drift";
};
// Checks the options (stage list, durations) without touching the server.
Status Validate(const LoadOptions& o);
Result<std::vector<int>> ParseStages(const std::string& text);

// One node's share of a stage: sessions through an entry URL land where the cluster places them
// (HTTP 307), and each node's /metrics gives its own figures.
struct NodeFigures {
  int sessions = 0;
  double fps_mean = 0, fps_worst = 0, proc_mean_ms = 0, proc_p99_ms = 0, server_cpu_pct = 0;
  bool passed = false;
  nlohmann::json ToJson() const;
};

struct StageResult {
  int sessions = 0;  // the sessions measured (the admitted ones when some were refused)
  int offered = 0, refused = 0;  // run_admitted: the stage's sessions, and how many got 503
  std::string refusal;           // the first refusal's reason
  bool passed = false;
  std::string verdict;  // why it failed or stopped ("" when it passed)
  double window_s = 0;
  double fps_mean = 0, fps_worst = 0, sent_fps_mean = 0;
  double e2e_p50_ms = 0, e2e_p99_ms = 0, e2e_max_ms = 0;
  // When the tail came: the frames that reached their viewers later than the p99 mark end to end
  // (LoadOptions::pass_p99_ms), by one-second slice of the window. A tail made in a slice or two
  // is a burst (the machine stalled); one spread over the window is a node short of CPU.
  int late_frames = 0, late_slices = 0, late_worst_slice_frames = 0;
  double late_worst_slice_at_s = 0;  // where the worst slice begins, s into the window
  double proc_mean_ms = 0, proc_p99_ms = 0;
  double stale_pct = 0, fail_closed = 0, viewer_loss_pct = 0, ingest_loss_pct = 0;
  // Of the frames sent, forwarded ones whose decode the server gave up (its executor seconds
  // behind): the viewers had them, but the sessions' decoders waited for a keyframe.
  double decodes_given_up_pct = 0;
  // Load shedding (server/speed_control.h): the sessions' levels at the window's end.
  double shed_level_mean = 0, shed_level_max = 0;
  double server_cpu_pct = 0, tool_cpu_pct = 0;
  double server_cpu_ms_per_frame = 0;  // server CPU over the window / frames sent
  // The server's CPU over the window by kind of thread (veil_thread_cpu_seconds_total{threads}),
  // % of one core, summed over the nodes: "frame" (the executor), "unnamed" (GStreamer's
  // streaming threads foremost), "http", ...
  std::map<std::string, double> server_cpu_pct_by_threads;
  // The page poller over the window (page_poll_ms > 0): snapshots fetched per second and their mean request time.
  double page_snapshots_per_s = 0, page_snapshot_ms = 0, page_failures = 0;
  std::map<std::string, double> stage_mean_ms, stage_p99_ms;  // server stages, per frame
  std::vector<double> session_fps;
  // Each session's frame phase, ms after session 0's modulo the frame interval, from the
  // starts of their frame schedules as sent (what --frame-phase asked for, as it happened).
  std::vector<double> frame_phases_ms;
  // Each session's publisher clock as it sent: parts per million fast (> 0) or slow against the
  // file's frame rate (0 but for --frame-phase drift).
  std::vector<double> clock_ppm;
  // Sessions the server ended during the stage (load shedding's last level, a failure): id -> the
  // session_ended event's detail. Their viewers' figures count; their server-side deltas do not
  // (their series are gone). Any such session fails the stage.
  std::map<std::string, std::string> ended;
  std::map<std::string, NodeFigures> nodes;  // by node URL; server_cpu_pct above is their sum
  nlohmann::json ToJson() const;
};

struct LoadRun {
  std::string label, server, input, mode, started;
  std::string frame_phase;  // LoadOptions::frame_phase
  std::vector<StageResult> stages;
  std::string stopped;  // non-empty when the run ended early (Ctrl-C, foreign session, refusal)
  nlohmann::json ToJson() const;
};

// Runs the stages in order; stops after the first failing one unless
// all_stages. Deletes every session it created, also when stopped.
Result<LoadRun> RunLoad(const LoadOptions& o, const std::function<void(const std::string&)>& progress);

}  // namespace veil
