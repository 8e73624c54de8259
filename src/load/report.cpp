#include "load/report.h"

#include <filesystem>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace veil {
namespace {
using json = nlohmann::json;

const char* kStageNames[] = {"queue_wait", "decode", "preprocess", "detect", "track", "mosaic", "encode", "send"};

std::string Label(const LoadRun& r) { return r.label.empty() ? r.mode : r.label; }

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f) return Status::Error("cannot write " + path);
  f << text;
  return f ? Status::Ok() : Status::Error("cannot write " + path);
}

// "4", or "4 of 6 offered (2 refused: 503)" for a stage run with the admitted sessions.
std::string SessionsCell(const StageResult& s) {
  if (s.refused <= 0) return std::to_string(s.sessions);
  return fmt::format("{} of {} offered ({} refused: 503)", s.sessions, s.offered, s.refused);
}

}  // namespace

std::string MarkdownTable(const std::vector<LoadRun>& runs) {
  std::string o =
      "| config | sessions | recv FPS (mean / worst) | server processing latency (mean / p99) | e2e latency p99 | "
      "stale drop | fail-closed frames | RTP loss | server CPU | tool CPU | dominant stage | pass |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const LoadRun& r : runs)
    for (const StageResult& s : r.stages) {
      if (s.window_s <= 0) {
        o += fmt::format("| {} | {} | - | - | - | - | - | - | - | - | - | stopped: {} |\n", Label(r), SessionsCell(s), s.verdict);
        continue;
      }
      std::string dom = "-";
      double best = -1;
      for (const auto& [k, v] : s.stage_mean_ms)
        if (k != "detect" && v > best) best = v, dom = fmt::format("{} {:.1f} ms", k, v);  // detect is off the frame path
      // Bypass past the node's decode capacity: frames forwarded, their decodes given up.
      const std::string stale = s.decodes_given_up_pct > 0
                                    ? fmt::format("{:.2f}% (decodes given up: {:.2f}%)", s.stale_pct, s.decodes_given_up_pct)
                                    : fmt::format("{:.2f}%", s.stale_pct);
      o += fmt::format("| {} | {} | {:.2f} / {:.2f} | {:.2f} / {:.2f} ms | {:.1f} ms | {} | {:.0f} | {:.2f}% | {:.0f}% | {:.0f}% | {} | {} |\n",
                       Label(r), SessionsCell(s), s.fps_mean, s.fps_worst, s.proc_mean_ms, s.proc_p99_ms, s.e2e_p99_ms,
                       stale, s.fail_closed, s.viewer_loss_pct, s.server_cpu_pct, s.tool_cpu_pct, dom,
                       s.passed ? "yes" : "no: " + s.verdict);
    }
  // The sessions' frame phases (--frame-phase), as their frame schedules began.
  std::string phases;
  for (const LoadRun& r : runs)
    for (const StageResult& s : r.stages) {
      if (s.window_s <= 0 || s.frame_phases_ms.size() < 2) continue;
      std::string list, clocks;
      for (double p : s.frame_phases_ms) list += fmt::format("{}{:.1f}", list.empty() ? "" : ", ", p);
      for (double c : s.clock_ppm) clocks += fmt::format("{}{:+.0f}", clocks.empty() ? "" : ", ", c);
      phases += fmt::format("| {} | {} | {} | {} | {} |\n", Label(r), s.sessions, r.frame_phase, list, clocks);
    }
  if (!phases.empty())
    o += "\n| config | sessions | frame phase | each session's at the start, ms after the first's (modulo a frame) | "
         "each session's clock as sent, ppm |\n|---|---|---|---|---|\n" + phases;
  // When the tail came: the frames later than the mark end to end, by one-second slice.
  std::string late;
  for (const LoadRun& r : runs)
    for (const StageResult& s : r.stages) {
      if (s.window_s <= 0 || s.late_frames == 0) continue;
      late += fmt::format("| {} | {} | {} | {} of {:.0f} | {} (at {:.0f} s) |\n", Label(r), SessionsCell(s), s.late_frames,
                          s.late_slices, std::ceil(s.window_s), s.late_worst_slice_frames, s.late_worst_slice_at_s);
    }
  if (!late.empty())
    o += "\n| config | sessions | frames later than the p99 mark end to end | one-second slices with any | in the worst slice |\n"
         "|---|---|---|---|---|\n" + late;
  // Where the server's CPU went, by kind of thread (veil_thread_cpu_seconds_total).
  std::string by_threads;
  for (const LoadRun& r : runs)
    for (const StageResult& s : r.stages) {
      if (s.window_s <= 0 || s.server_cpu_pct_by_threads.empty()) continue;
      std::vector<std::pair<double, std::string>> kinds;
      for (const auto& [kind, pct] : s.server_cpu_pct_by_threads) kinds.emplace_back(pct, kind);
      std::sort(kinds.rbegin(), kinds.rend());
      std::string list;
      for (const auto& [pct, kind] : kinds)
        if (pct >= 0.5) list += fmt::format("{}{} {:.0f}%", list.empty() ? "" : ", ", kind, pct);
      by_threads += fmt::format("| {} | {} | {:.0f}% | {} |\n", Label(r), SessionsCell(s), s.server_cpu_pct, list);
    }
  if (!by_threads.empty())
    o += "\n| config | sessions | server CPU | by kind of thread (% of one core; frame: the frame executor, unnamed: "
         "GStreamer's streaming threads foremost) |\n|---|---|---|---|\n" + by_threads;
  // Through a cluster's entry URL: where the sessions landed and how each node did.
  bool spread = false;
  for (const LoadRun& r : runs)
    for (const StageResult& s : r.stages) spread = spread || s.nodes.size() > 1;
  if (!spread) return o;
  o += "\n| config | sessions | node | its sessions | recv FPS (mean / worst) | processing p99 | node CPU | pass |\n"
       "|---|---|---|---|---|---|---|---|\n";
  for (const LoadRun& r : runs)
    for (const StageResult& s : r.stages)
      for (const auto& [url, n] : s.nodes)
        o += fmt::format("| {} | {} | {} | {} | {:.2f} / {:.2f} | {:.2f} ms | {:.0f}% | {} |\n", Label(r), s.sessions, url,
                         n.sessions, n.fps_mean, n.fps_worst, n.proc_p99_ms, n.server_cpu_pct, n.passed ? "yes" : "no");
  return o;
}

std::string Csv(const std::vector<LoadRun>& runs) {
  std::string o =
      "config,sessions,passed,window_s,recv_fps_mean,recv_fps_worst,sent_fps_mean,e2e_p50_ms,e2e_p99_ms,e2e_max_ms,"
      "proc_mean_ms,proc_p99_ms,stale_drop_pct,fail_closed_frames,viewer_rtp_loss_pct,ingest_rtp_loss_pct,"
      "server_cpu_pct,tool_cpu_pct";
  for (const char* k : kStageNames) o += fmt::format(",{}_mean_ms,{}_p99_ms", k, k);
  o += "\n";
  for (const LoadRun& r : runs)
    for (const StageResult& s : r.stages) {
      o += fmt::format("{},{},{},{:.2f},{:.3f},{:.3f},{:.3f},{:.2f},{:.2f},{:.2f},{:.3f},{:.3f},{:.3f},{:.0f},{:.3f},{:.3f},{:.1f},{:.1f}",
                       Label(r), s.sessions, s.passed ? 1 : 0, s.window_s, s.fps_mean, s.fps_worst, s.sent_fps_mean,
                       s.e2e_p50_ms, s.e2e_p99_ms, s.e2e_max_ms, s.proc_mean_ms, s.proc_p99_ms, s.stale_pct,
                       s.fail_closed, s.viewer_loss_pct, s.ingest_loss_pct, s.server_cpu_pct, s.tool_cpu_pct);
      for (const char* k : kStageNames) {
        auto m = s.stage_mean_ms.find(k);
        auto p = s.stage_p99_ms.find(k);
        o += fmt::format(",{:.3f},{:.3f}", m == s.stage_mean_ms.end() ? 0.0 : m->second,
                         p == s.stage_p99_ms.end() ? 0.0 : p->second);
      }
      o += "\n";
    }
  return o;
}

std::string Svg(const std::vector<LoadRun>& runs) {
  const double W = 720, H = 420, L = 60, R = 60, T = 40, B = 50;
  double max_sessions = 1, max_lat = 40;
  for (const auto& r : runs)
    for (const auto& s : r.stages) {
      max_sessions = std::max(max_sessions, double(s.sessions));
      max_lat = std::max(max_lat, s.proc_p99_ms * 1.1);
    }
  auto x = [&](double n) { return L + (W - L - R) * (n / max_sessions); };
  auto yf = [&](double fps) { return H - B - (H - T - B) * std::min(fps, 35.0) / 35.0; };
  auto yl = [&](double ms) { return H - B - (H - T - B) * ms / max_lat; };
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"22\" font-size=\"14\">veil load: received FPS (solid, left) and p99 processing latency (dashed, right)</text>\n",
      W, H, L);
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", L, H - B, W - R);
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", L, T, H - B);
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", W - R, T, H - B);
  for (double f = 0; f <= 35; f += 5)
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.0f}</text>\n", L - 6, yf(f) + 4, f);
  for (int i = 0; i <= 4; ++i) {
    const double ms = max_lat * i / 4;
    o += fmt::format("<text x=\"{}\" y=\"{}\">{:.0f} ms</text>\n", W - R + 6, yl(ms) + 4, ms);
  }
  o += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#c00\" stroke-dasharray=\"2,4\"/>\n", L,
                   yf(25), W - R);
  o += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"#c00\">25 fps pass mark</text>\n", L + 4, yf(25) - 4);
  o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">sessions</text>\n", (L + W - R) / 2, H - 12);
  const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
  std::map<double, bool> ticks;
  for (size_t i = 0; i < runs.size(); ++i) {
    const char* c = colors[i % 6];
    std::string fps_pts, lat_pts;
    for (const auto& s : runs[i].stages) {
      if (s.window_s <= 0) continue;
      fps_pts += fmt::format("{:.1f},{:.1f} ", x(s.sessions), yf(s.fps_mean));
      lat_pts += fmt::format("{:.1f},{:.1f} ", x(s.sessions), yl(s.proc_p99_ms));
      ticks[s.sessions] = true;
      o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", x(s.sessions), yf(s.fps_mean), c);
    }
    o += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", fps_pts, c);
    o += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"6,4\"/>\n",
                     lat_pts, c);
    o += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n", L + 10, T + 16 + 16 * double(i), c,
                     Label(runs[i]));
  }
  for (const auto& [n, _] : ticks)
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{:.0f}</text>\n", x(n), H - B + 16, n);
  o += "</svg>\n";
  return o;
}

Status WriteOutputs(const std::string& dir, const std::vector<LoadRun>& runs, const json& extra) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Error("cannot create " + dir + ": " + ec.message());
  const std::string j = dir + "/load.json";
  std::rename(j.c_str(), (dir + "/load.prev.json").c_str());
  json all = json::object();
  all["runs"] = json::array();
  for (const auto& r : runs) all["runs"].push_back(r.ToJson());
  if (!extra.is_null()) all.update(extra);
  for (Status s : {WriteFile(j, all.dump(2) + "\n"), WriteFile(dir + "/load.csv", Csv(runs)),
                   WriteFile(dir + "/load.md", MarkdownTable(runs)), WriteFile(dir + "/load.svg", Svg(runs))})
    if (!s) return s;
  return Status::Ok();
}

std::vector<CompareFigure> CompareFigures(const std::vector<LoadRun>& a, const std::vector<LoadRun>& b) {
  std::map<std::string, CompareFigure> f;
  std::vector<std::string> order;
  auto add = [&](const std::string& name, double v, bool is_a) {
    if (!f.count(name)) {
      f[name].name = name;
      order.push_back(name);
    }
    (is_a ? f[name].a : f[name].b).push_back(v);
  };
  for (bool is_a : {true, false})
    for (const LoadRun& r : is_a ? a : b)
      for (const StageResult& s : r.stages) {
        if (s.window_s <= 0) continue;
        const std::string at = fmt::format(" @{}", s.sessions);
        add("recv fps mean" + at, s.fps_mean, is_a);
        add("recv fps worst" + at, s.fps_worst, is_a);
        add("processing p99 ms" + at, s.proc_p99_ms, is_a);
        add("e2e p99 ms" + at, s.e2e_p99_ms, is_a);
        add("stale drop %" + at, s.stale_pct, is_a);
        add("fail-closed frames" + at, s.fail_closed, is_a);
        add("shed level mean" + at, s.shed_level_mean, is_a);
        add("server cpu %" + at, s.server_cpu_pct, is_a);
        add("server cpu ms/frame" + at, s.server_cpu_ms_per_frame, is_a);
        add("processing mean ms" + at, s.proc_mean_ms, is_a);
        add("page snapshots/s" + at, s.page_snapshots_per_s, is_a);
        for (const auto& [k, v] : s.stage_mean_ms) add(k + " ms/frame" + at, v, is_a);
      }
  std::vector<CompareFigure> out;
  for (const auto& n : order) out.push_back(f[n]);
  return out;
}

namespace {
struct Range {
  double mean = 0, lo = 0, hi = 0;
};
Range RangeOf(const std::vector<double>& v) {
  Range r;
  if (v.empty()) return r;
  r.lo = *std::min_element(v.begin(), v.end());
  r.hi = *std::max_element(v.begin(), v.end());
  for (double x : v) r.mean += x;
  r.mean /= double(v.size());
  return r;
}
}  // namespace

std::string CompareTable(const std::string& la, const std::string& lb, const std::vector<CompareFigure>& f) {
  std::string o = fmt::format("| figure | {} mean [range] | {} mean [range] | change | ranges overlap |\n|---|---|---|---|---|\n", la, lb);
  for (const auto& c : f) {
    // A side measured in fewer runs than the other (runs that stopped before this stage) says
    // how many; a side with none has no figure and nothing to compare.
    const size_t most = std::max(c.a.size(), c.b.size());
    auto cell = [most](const std::vector<double>& v) {
      if (v.empty()) return std::string("- (no run measured it)");
      const Range r = RangeOf(v);
      std::string s = fmt::format("{:.2f} [{:.2f}, {:.2f}]", r.mean, r.lo, r.hi);
      if (v.size() < most) s.append(fmt::format(" ({} of {} runs)", v.size(), most));
      return s;
    };
    std::string change = "-", overlap = "-";
    if (!c.a.empty() && !c.b.empty()) {
      const Range a = RangeOf(c.a), b = RangeOf(c.b);
      change = fmt::format("{:+.2f}", b.mean - a.mean);
      overlap = !(a.hi < b.lo || b.hi < a.lo) ? "yes" : "**no**";
    }
    o += fmt::format("| {} | {} | {} | {} | {} |\n", c.name, cell(c.a), cell(c.b), change, overlap);
  }
  return o;
}

json CompareJson(const std::string& la, const std::string& lb, const std::vector<CompareFigure>& f) {
  json j = {{"a", la}, {"b", lb}, {"figures", json::array()}};
  for (const auto& c : f) {
    const Range a = RangeOf(c.a), b = RangeOf(c.b);
    auto side = [](const std::vector<double>& v, const Range& r) {
      return v.empty() ? json{{"values", v}} : json{{"values", v}, {"mean", r.mean}, {"min", r.lo}, {"max", r.hi}};
    };
    json fig = {{"name", c.name}, {"a", side(c.a, a)}, {"b", side(c.b, b)}};
    if (!c.a.empty() && !c.b.empty()) fig["overlap"] = !(a.hi < b.lo || b.hi < a.lo);
    j["figures"].push_back(fig);
  }
  return j;
}

std::string Explain(const json& last, const json* previous) {
  auto stages_of = [](const json& doc) {
    // The last measured stage of the last run: the heaviest load measured.
    json best;
    if (doc.contains("runs"))
      for (const auto& r : doc["runs"])
        for (const auto& s : r["stages"])
          if (s.value("window_s", 0.0) > 0) best = s;
    return best;
  };
  const json s = stages_of(last);
  if (s.is_null()) return "no measured stage in this run\n";
  std::string o;
  std::vector<std::pair<double, std::string>> by;
  double total = 0;
  // Detection runs asynchronously (its latency shows as fail-closed frames,
  // its CPU as slower other stages): listed, but not a candidate for the
  // stage that frames wait on.
  for (const auto& [k, v] : s["stage_mean_ms"].items()) {
    if (k == "detect") continue;
    by.push_back({v.get<double>(), k});
    total += v.get<double>();
  }
  std::sort(by.rbegin(), by.rend());
  if (s["stage_mean_ms"].contains("detect"))
    by.push_back({s["stage_mean_ms"]["detect"].get<double>(), "detect"});
  o += fmt::format("at {} sessions: {:.1f} fps (worst {:.1f}), processing p99 {:.1f} ms, stale drops {:.1f}%\n",
                   s["sessions"].get<int>(), s["received_fps_mean"].get<double>(), s["received_fps_worst"].get<double>(),
                   s["processing_ms"]["p99"].get<double>(), s["stale_drop_pct"].get<double>());
  if (!by.empty() && total > 0)
    o += fmt::format("dominant stage: {} ({:.1f} ms/frame, {:.0f}% of the per-frame stage time)\n", by[0].second,
                     by[0].first, 100 * by[0].first / total);
  for (const auto& [v, k] : by)
    o += fmt::format("  {:<11} {:7.2f} ms/frame{}\n", k, v, k == "detect" ? "  (asynchronous: submit -> result, per frame)" : "");
  o += fmt::format("fail-closed frames: {:.0f} (rising: detection results late or failing)\n",
                   s.value("fail_closed_frames", 0.0));
  if (!previous) return o;
  const json p = stages_of(*previous);
  if (p.is_null() || p["sessions"] != s["sessions"]) {
    o += "the previous run has no stage with the same session count to compare with\n";
    return o;
  }
  std::vector<std::pair<double, std::string>> changes;
  for (const auto& [k, v] : s["stage_mean_ms"].items()) {
    const double before = p["stage_mean_ms"].value(k, 0.0), now = v.get<double>();
    const double d = now - before;
    if (std::abs(d) >= 0.3 && std::abs(d) >= 0.1 * std::max(before, 0.1))
      changes.push_back({d, fmt::format("{} {:+.1f} ms/frame ({:.1f} -> {:.1f})", k, d, before, now)});
  }
  auto fig = [&](const char* name, double before, double now, const char* unit) {
    if (std::abs(now - before) >= 0.05 * std::max(std::abs(before), 1.0))
      o += fmt::format("  {} {:.1f}{} -> {:.1f}{}\n", name, before, unit, now, unit);
  };
  o += fmt::format("changes since the previous run (at {} sessions):\n", s["sessions"].get<int>());
  std::sort(changes.begin(), changes.end(), [](auto& a, auto& b) { return std::abs(a.first) > std::abs(b.first); });
  for (const auto& [d, text] : changes) o += "  " + text + "\n";
  fig("received fps", p["received_fps_mean"].get<double>(), s["received_fps_mean"].get<double>(), "");
  fig("processing p99", p["processing_ms"]["p99"].get<double>(), s["processing_ms"]["p99"].get<double>(), " ms");
  fig("server CPU", p["server_cpu_pct"].get<double>(), s["server_cpu_pct"].get<double>(), "%");
  if (changes.empty()) o += "  no stage changed by more than 0.3 ms/frame and 10%\n";
  return o;
}

}  // namespace veil
