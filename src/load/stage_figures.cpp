#include "load/stage_figures.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace veil {
namespace {
const char* kStages[] = {"queue_wait", "decode", "preprocess", "detect", "track", "mosaic", "encode", "send"};
}  // namespace

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5));
  return v[i];
}

void FillStageFigures(const LoadOptions& o, const LoadSessions& sessions, const StageWindow& w, StageResult& res) {
  const double window_s = (w.wall1 - w.wall0) / 1000.0;
  res.window_s = window_s;
  constexpr double kMs = 1000;  // the server exports seconds; the tables are in ms
  // Client side: FPS and end-to-end latency; server side: deltas of our sessions' series over
  // the window, each from its node's /metrics.
  std::vector<double> lat;
  std::map<int, int> late_by_slice;  // one-second slice of the window -> frames later than the mark
  double fps_sum = 0, sent_sum = 0, lost = 0, pk = 0;
  HistSnapshot proc;
  std::map<std::string, HistSnapshot> stage, node_proc;
  double in = 0, sent = 0, stale = 0, fc = 0, ingest_lost = 0, level_sum = 0, given_up = 0;
  int with_series = 0;
  res.fps_worst = 1e9;
  double first0 = 0;  // session 0's frame schedule as sent: the phases' origin
  if (!sessions.empty()) {
    std::lock_guard lk(sessions[0]->mu);
    first0 = sessions[0]->schedule0;
  }
  for (size_t i = 0; i < sessions.size(); ++i) {
    LoadSession& s = *sessions[i];
    const std::vector<PromSample>& a = w.m0.at(s.node);
    const std::vector<PromSample>& b = w.m1.at(s.node);
    // A session the server ended mid-stage has no series at the end: its viewer's figures
    // count (what its viewer got), its server-side deltas cannot.
    const bool gone = res.ended.count(s.id) > 0;
    {
      std::lock_guard lk(s.mu);
      const double win = (w.t_end - w.t_warm) / 1000.0;
      const double fps = s.received / win;
      res.session_fps.push_back(fps);
      // Its clock as sent: frames over the time they took, against the file's rate.
      res.clock_ppm.push_back(s.frames_sent > 30 && s.last_sent > s.first_sent
                                  ? 1e6 * (double(s.frames_sent - 1) * w.frame_ms / (s.last_sent - s.first_sent) - 1.0)
                                  : 0.0);
      if (s.schedule0 > 0 && first0 > 0 && i > 0) {
        double ph = std::fmod(s.schedule0 - first0, w.frame_ms);
        res.frame_phases_ms.push_back(ph < 0 ? ph + w.frame_ms : ph);
      } else {
        res.frame_phases_ms.push_back(0);
      }
      fps_sum += fps;
      sent_sum += s.sent_in_window / win;
      res.fps_worst = std::min(res.fps_worst, fps);
      lat.insert(lat.end(), s.latencies.begin(), s.latencies.end());
      for (size_t k = 0; k < s.latencies.size(); ++k) {
        if (s.latencies[k] <= o.pass_p99_ms) continue;
        ++res.late_frames;
        if (k < s.arrivals.size()) ++late_by_slice[int(std::floor((s.arrivals[k] - w.t_warm) / 1000.0))];
      }
      NodeFigures& nf = res.nodes[s.node];
      nf.fps_worst = nf.sessions == 0 ? fps : std::min(nf.fps_worst, fps);
      nf.fps_mean += fps;  // a sum until divided below
      ++nf.sessions;
    }
    lost += double(w.v1[i].rtp.lost - w.v0[i].rtp.lost);
    pk += double(w.v1[i].rtp.packets - w.v0[i].rtp.packets);
    if (gone) continue;
    const std::map<std::string, std::string> l = {{"session", s.id}};
    const HistSnapshot p =
        Delta(SumHistogram(b, "veil_session_processing_seconds", l, kMs), SumHistogram(a, "veil_session_processing_seconds", l, kMs));
    proc = Merge(proc, p);
    node_proc[s.node] = Merge(node_proc[s.node], p);
    for (const char* st : kStages) {
      const std::map<std::string, std::string> ls = {{"session", s.id}, {"stage", st}};
      stage[st] = Merge(stage[st], Delta(SumHistogram(b, "veil_session_stage_seconds", ls, kMs),
                                         SumHistogram(a, "veil_session_stage_seconds", ls, kMs)));
    }
    auto d = [&](const char* name) { return SumValue(b, name, l) - SumValue(a, name, l); };
    in += d("veil_session_frames_received_total");
    sent += d("veil_session_frames_sent_total");
    stale += d("veil_session_stale_drops_total");
    given_up += d("veil_session_decodes_given_up_total");
    fc += d("veil_session_fail_closed_frames_total");
    ingest_lost += d("veil_session_rtp_lost_packets_total");
    const double level = SumValue(b, "veil_session_shed_level", l);  // at the window's end
    level_sum += level;
    ++with_series;
    res.shed_level_max = std::max(res.shed_level_max, level);
  }
  // Over the sessions still there at the window's end (an ended one has no level to count).
  res.shed_level_mean = with_series > 0 ? level_sum / double(with_series) : 0;
  const double n = double(std::max<size_t>(1, sessions.size()));
  if (sessions.empty()) res.fps_worst = 0;
  res.fps_mean = fps_sum / n;
  res.sent_fps_mean = sent_sum / n;
  res.e2e_p50_ms = Percentile(lat, 0.5);
  res.e2e_p99_ms = Percentile(lat, 0.99);
  res.e2e_max_ms = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
  res.late_slices = int(late_by_slice.size());
  for (const auto& [slice, n] : late_by_slice)
    if (n > res.late_worst_slice_frames) {  // the earliest of equals
      res.late_worst_slice_frames = n;
      res.late_worst_slice_at_s = slice;
    }
  res.viewer_loss_pct = pk + lost > 0 ? 100.0 * lost / (pk + lost) : 0;
  res.proc_mean_ms = proc.mean();
  res.proc_p99_ms = proc.Quantile(0.99);
  // Per frame sent: a stage that runs on some frames only (detect; encode when bypass
  // forwards the publisher's frames) is spread over all of them.
  const double frames = std::max(1.0, sent);
  for (const char* st : kStages) {
    res.stage_mean_ms[st] = stage[st].sum / frames;
    res.stage_p99_ms[st] = stage[st].Quantile(0.99);
  }
  res.stale_pct = in > 0 ? 100.0 * stale / in : 0;
  res.decodes_given_up_pct = sent > 0 ? 100.0 * given_up / sent : 0;
  res.fail_closed = fc;
  res.ingest_loss_pct = pk > 0 ? 100.0 * ingest_lost / (pk + ingest_lost) : 0;
  double out_frames = 0;
  for (const std::string& url : w.node_urls) {
    const double cpu = 100.0 * (SumValue(w.m1.at(url), "veil_process_cpu_seconds_total") -
                                SumValue(w.m0.at(url), "veil_process_cpu_seconds_total")) / window_s;
    res.server_cpu_pct += cpu;
    // By kind of thread: each series' growth over the window (a kind first seen at its end counts whole).
    for (const PromSample& later : w.m1.at(url)) {
      if (later.name != "veil_thread_cpu_seconds_total") continue;
      const auto kind = later.labels.find("threads");
      if (kind == later.labels.end()) continue;
      const double before = SumValue(w.m0.at(url), later.name, {{"threads", kind->second}});
      res.server_cpu_pct_by_threads[kind->second] += 100.0 * (later.value - before) / window_s;
    }
    out_frames += SumValue(w.m1.at(url), "veil_session_frames_sent_total") - SumValue(w.m0.at(url), "veil_session_frames_sent_total");
    auto it = res.nodes.find(url);
    if (it == res.nodes.end()) continue;  // the entry node took no session
    NodeFigures& nf = it->second;
    nf.server_cpu_pct = cpu;
    nf.fps_mean /= std::max(1, nf.sessions);
    nf.proc_mean_ms = node_proc[url].mean();
    nf.proc_p99_ms = node_proc[url].Quantile(0.99);
    nf.passed = nf.fps_worst > o.pass_fps && nf.proc_p99_ms < o.pass_p99_ms;
  }
  res.tool_cpu_pct = 100.0 * (w.tool_cpu1 - w.tool_cpu0) / (w.wall1 - w.wall0);
  res.server_cpu_ms_per_frame = out_frames > 0 ? res.server_cpu_pct * 10.0 * window_s / out_frames : 0;
  if (w.page1.rounds > 0) {
    const double shots = double(w.page1.snapshots - w.page0.snapshots);
    res.page_snapshots_per_s = shots / window_s;
    res.page_snapshot_ms = shots > 0 ? (w.page1.snapshot_ms_sum - w.page0.snapshot_ms_sum) / shots : 0;
    res.page_failures = double(w.page1.failures - w.page0.failures);
  }
  res.passed = res.fps_worst > o.pass_fps && res.proc_p99_ms < o.pass_p99_ms;
  if (!res.passed)
    res.verdict = res.fps_worst <= o.pass_fps
                      ? fmt::format("worst session received {:.1f} fps (pass: > {:.0f})", res.fps_worst, o.pass_fps)
                      : fmt::format("p99 processing latency {:.1f} ms (pass: < {:.1f})", res.proc_p99_ms, o.pass_p99_ms);
  // Forwarded frames whose decodes the node gave up (seconds behind): the viewers had them, but
  // a switch to anonymize would have waited for a keyframe. The node did not carry the load.
  if (res.passed && res.decodes_given_up_pct > 0) {
    res.passed = false;
    res.verdict = fmt::format("the node gave up {:.2f}% of the forwarded frames' decodes (pass: none)",
                              res.decodes_given_up_pct);
  }
  if (!res.ended.empty()) {  // whatever the figures: a session the server ended is a failed stage
    res.passed = false;
    res.verdict = fmt::format("the server ended {} session(s) mid-stage: {}: {}", res.ended.size(),
                              res.ended.begin()->first, res.ended.begin()->second);
  }
}

}  // namespace veil
