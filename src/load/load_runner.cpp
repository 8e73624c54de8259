#include "load/load_runner.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <chrono>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "client/api_client.h"
#include "client/rtp_publisher.h"
#include "core/clock.h"
#include "load/load_session.h"
#include "load/page_poller.h"
#include "load/prom_text.h"
#include "load/stage_figures.h"

namespace veil {
using json = nlohmann::json;

Result<std::vector<int>> ParseStages(const std::string& text) {
  std::vector<int> out;
  size_t i = 0;
  while (i <= text.size()) {
    const size_t comma = std::min(text.find(',', i), text.size());
    const std::string t = text.substr(i, comma - i);
    int n = 0;
    auto r = std::from_chars(t.data(), t.data() + t.size(), n);
    if (t.empty() || r.ec != std::errc() || r.ptr != t.data() + t.size())
      return Status::Error("stages must be a comma-separated list of session counts, got '" + text + "'");
    out.push_back(n);
    i = comma + 1;
  }
  return out;
}

Status Validate(const LoadOptions& o) {
  if (o.stages.empty()) return Status::Error("the stage list is empty");
  if (o.stages.size() > 32) return Status::Error("at most 32 stages");
  for (int n : o.stages)
    if (n < 1 || n > 256) return Status::Error("a stage must have 1..256 sessions, got " + std::to_string(n));
  if (!(o.stage_seconds >= 2 && o.stage_seconds <= 3600)) return Status::Error("stage seconds must be in [2, 3600]");
  if (!(o.warmup_seconds >= 0 && o.warmup_seconds < o.stage_seconds))
    return Status::Error("warm-up must be shorter than the stage");
  if (!o.mode.empty() && o.mode != "anonymize" && o.mode != "bypass" && o.mode != "full_blur")
    return Status::Error("mode must be anonymize, bypass or full_blur, got '" + o.mode + "'");
  if (o.frame_phase != "created" && o.frame_phase != "aligned" && o.frame_phase != "spread" && o.frame_phase != "drift")
    return Status::Error("frame phase must be created, aligned, spread or drift, got '" + o.frame_phase + "'");
  return Status::Ok();
}

json StageResult::ToJson() const {
  json j = {{"sessions", sessions},
            {"offered", offered > 0 ? offered : sessions},
            {"refused", refused},
            {"passed", passed},
            {"verdict", verdict},
            {"window_s", window_s},
            {"received_fps_mean", fps_mean},
            {"received_fps_worst", fps_worst},
            {"sent_fps_mean", sent_fps_mean},
            {"e2e_latency_ms", {{"p50", e2e_p50_ms}, {"p99", e2e_p99_ms}, {"max", e2e_max_ms}}},
            {"late_frames", {{"frames", late_frames}, {"slices", late_slices},
                             {"worst_slice_frames", late_worst_slice_frames}, {"worst_slice_at_s", late_worst_slice_at_s}}},
            {"processing_ms", {{"mean", proc_mean_ms}, {"p99", proc_p99_ms}}},
            {"stale_drop_pct", stale_pct},
            {"decodes_given_up_pct", decodes_given_up_pct},
            {"fail_closed_frames", fail_closed},
            {"shed_level", {{"mean", shed_level_mean}, {"max", shed_level_max}}},
            {"viewer_rtp_loss_pct", viewer_loss_pct},
            {"ingest_rtp_loss_pct", ingest_loss_pct},
            {"server_cpu_pct", server_cpu_pct},
            {"tool_cpu_pct", tool_cpu_pct},
            {"server_cpu_ms_per_frame", server_cpu_ms_per_frame},
            {"page_poll", {{"snapshots_per_s", page_snapshots_per_s}, {"snapshot_ms", page_snapshot_ms}, {"failures", page_failures}}},
            {"session_fps", session_fps},
            {"frame_phases_ms", frame_phases_ms},
            {"clock_ppm", clock_ppm},
            {"ended_by_server", ended}};
  if (refused > 0) j["refusal"] = refusal;
  for (const auto& [k, v] : stage_mean_ms) j["stage_mean_ms"][k] = v;
  for (const auto& [k, v] : stage_p99_ms) j["stage_p99_ms"][k] = v;
  j["server_cpu_pct_by_threads"] = json::object();
  for (const auto& [k, v] : server_cpu_pct_by_threads) j["server_cpu_pct_by_threads"][k] = v;
  j["nodes"] = json::object();
  for (const auto& [url, n] : nodes) j["nodes"][url] = n.ToJson();
  return j;
}

json NodeFigures::ToJson() const {
  return {{"sessions", sessions},
          {"received_fps_mean", fps_mean},
          {"received_fps_worst", fps_worst},
          {"processing_ms", {{"mean", proc_mean_ms}, {"p99", proc_p99_ms}}},
          {"server_cpu_pct", server_cpu_pct},
          {"passed", passed}};
}

json LoadRun::ToJson() const {
  json st = json::array();
  for (const auto& s : stages) st.push_back(s.ToJson());
  return {{"label", label},     {"server", server},   {"input", input},     {"mode", mode},
          {"frame_phase", frame_phase}, {"started", started}, {"stopped", stopped}, {"stages", st}};
}

Result<LoadRun> RunLoad(const LoadOptions& o, const std::function<void(const std::string&)>& progress) {
  if (Status s = Validate(o); !s) return s;
  auto clip = LoadClip(o.input);
  if (!clip) return clip.status();
  auto codec = ParseVideoCodec((*clip)->info.video_codec);
  if (!codec) return codec.status();
  auto api_r = ApiClient::Create(o.server, o.token);
  if (!api_r) return api_r.status();
  ApiClient& api = **api_r;
  // Every node's /metrics: the entry node's and those of the nodes holding a session.
  auto node_metrics = [&](const std::set<std::string>& urls) -> Result<NodeMetrics> {
    NodeMetrics out;
    for (const std::string& url : urls) {
      ApiClient* c = &api;
      std::unique_ptr<ApiClient> other;
      if (url != api.url()) {
        auto o2 = ApiClient::Create(url, o.token);
        if (!o2) return o2.status();
        other = std::move(*o2);
        c = other.get();
      }
      auto r = c->CallText("GET", "/metrics");
      if (!r) return Status::Error(url + ": " + r.error());
      out[url] = ParsePromText(*r);
    }
    return out;
  };
  // Refuse a server that has sessions we did not create (production) unless --force.
  auto foreign = [&](const std::set<std::string>& ours) -> Result<std::vector<std::string>> {
    auto r = api.Call("GET", "/v1/sessions");
    if (!r) return r.status();
    if (r->status != 200) return Status::Error("GET /v1/sessions: " + r->error());
    std::vector<std::string> f;
    for (const auto& s : r->body["sessions"])
      if (!ours.count(s["id"].get<std::string>())) f.push_back(s["id"]);
    return f;
  };
  auto first = foreign({});
  if (!first) return first.status();
  if (!first->empty() && !o.force)
    return Status::Error("the server has " + std::to_string(first->size()) + " session(s) this tool did not create (" +
                         (*first)[0] + ", ...): refusing to load a server in use; --force overrides");

  LoadRun run;
  run.label = o.label;
  run.server = o.server;
  run.input = o.input;
  run.mode = o.mode.empty() ? "server default" : o.mode;
  run.frame_phase = o.frame_phase;
  run.started = UtcNowIso();
  // Keyframes staggered across sessions: offsets spread over one GOP.
  double gop_ms = 2000;
  {
    std::vector<int64_t> keys;
    for (const auto& p : (*clip)->packets)
      if (!p.audio && p.keyframe) keys.push_back(p.pts_us);
    if (keys.size() >= 2) gop_ms = double(keys[1] - keys[0]) / 1000.0;
  }
  double frame_ms = 1000.0 / 30;  // the clip's frame interval: the median step between video frames
  {
    std::vector<double> steps;
    int64_t prev = -1;
    for (const auto& p : (*clip)->packets) {
      if (p.audio) continue;
      if (prev >= 0 && p.pts_us > prev) steps.push_back(double(p.pts_us - prev) / 1000.0);
      prev = p.pts_us;
    }
    if (!steps.empty()) frame_ms = std::clamp(Percentile(steps, 0.5), 1.0, 1000.0);
  }
  const std::string prefix = "load-" + std::to_string(getpid()) + "-";
  for (size_t si = 0; si < o.stages.size() && run.stopped.empty(); ++si) {
    const int n = o.stages[si];
    StageResult res;
    res.sessions = n;
    LoadSessions sessions;
    std::set<std::string> ours;
    auto cleanup = [&] {
      for (auto& s : sessions) {
        if (s->pub) s->pub->Stop();
        if (s->api) s->api->Call("DELETE", "/v1/sessions/" + s->id);
      }
      sessions.clear();
    };
    // Create the sessions, their viewers and publishers.
    const std::string failure = CreateSessions(o, *clip, *codec, gop_ms, frame_ms, prefix + std::to_string(si) + "-", n,
                                               sessions, ours, res);
    if (res.refused > 0) {
      res.offered = n;
      res.sessions = int(sessions.size());
    }
    if (!failure.empty()) {
      cleanup();
      res.verdict = failure;
      run.stages.push_back(res);
      run.stopped = failure;
      break;
    }
    // An open operator page, when asked for.
    std::unique_ptr<PagePoller> page;
    if (o.page_poll_ms > 0) {
      auto pp = PagePoller::Start(o.server, o.token, ours, o.page_poll_ms);
      if (!pp) {
        cleanup();
        return pp.status();
      }
      page = std::move(*pp);
    }
    // Warm-up, then the measured window.
    StageWindow w;
    w.frame_ms = frame_ms;
    const double t_start = NowMs();
    w.t_warm = t_start + o.warmup_seconds * 1000;
    w.t_end = t_start + o.stage_seconds * 1000;
    for (auto& s : sessions) {
      std::lock_guard lk(s->mu);
      s->window_from = w.t_warm;
      s->window_to = w.t_end;
    }
    w.node_urls = {api.url()};
    for (const auto& s : sessions) w.node_urls.insert(s->node);
    bool measured = false;
    double last_check = 0, last_progress = 0;
    while (NowMs() < w.t_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      if (StopRequested()) {
        run.stopped = "interrupted (Ctrl-C)";
        break;
      }
      if (!measured && NowMs() >= w.t_warm) {
        auto m = node_metrics(w.node_urls);
        if (!m) {
          run.stopped = m.error();
          break;
        }
        w.m0 = std::move(*m);
        for (auto& s : sessions) w.v0.push_back(s->viewer->counters());
        w.tool_cpu0 = ProcessCpuMs();
        w.wall0 = NowMs();
        if (page) w.page0 = page->counts();
        measured = true;
      }
      if (NowMs() - last_check > 1000) {
        last_check = NowMs();
        auto f = foreign(ours);
        if (f && !f->empty() && !o.force) {
          run.stopped = "session " + (*f)[0] + " appeared on the server mid-run (not ours): stage stopped";
          break;
        }
        if (progress && NowMs() - last_progress >= 5000 - 1) {
          last_progress = NowMs();
          progress(fmt::format("stage {}/{}: {} sessions, {:.0f}/{:.0f} s{}", si + 1, o.stages.size(), n,
                               (NowMs() - t_start) / 1000, o.stage_seconds, measured ? "" : " (warm-up)"));
        }
      }
    }
    if (!run.stopped.empty() || !measured) {
      page.reset();
      cleanup();
      if (run.stopped.empty()) run.stopped = "the stage ended before its warm-up did";
      res.verdict = run.stopped;
      run.stages.push_back(res);
      break;
    }
    auto m1r = node_metrics(w.node_urls);
    w.wall1 = NowMs();
    w.tool_cpu1 = ProcessCpuMs();
    res.ended = EndedByServer(sessions);
    for (auto& s : sessions) w.v1.push_back(s->viewer->counters());
    if (page) w.page1 = page->counts();
    page.reset();
    for (auto& s : sessions) s->pub->Stop();
    if (!m1r) {
      cleanup();
      return m1r.status();
    }
    w.m1 = std::move(*m1r);
    FillStageFigures(o, sessions, w, res);
    cleanup();
    if (progress)
      progress(fmt::format("stage {}/{}: {} sessions{}: {:.1f} fps (worst {:.1f}), p99 processing {:.1f} ms, server CPU {:.0f}% -> {}",
                           si + 1, o.stages.size(), res.sessions,
                           res.refused > 0 ? fmt::format(" admitted of {} offered ({} refused)", n, res.refused) : "",
                           res.fps_mean, res.fps_worst, res.proc_p99_ms, res.server_cpu_pct,
                           res.passed ? "pass" : "FAIL: " + res.verdict));
    run.stages.push_back(res);
    if (res.refused > 0) {
      run.stopped = fmt::format("{} of {} offered sessions admitted and measured, {} refused with 503: {}", res.sessions,
                                n, res.refused, res.refusal);
      break;
    }
    if (!res.passed && !o.all_stages) break;
  }
  return run;
}

}  // namespace veil
