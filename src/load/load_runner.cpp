#include "load/load_runner.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <chrono>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "client/api_client.h"
#include "client/rtp_publisher.h"
#include "client/rtp_viewer.h"
#include "core/clock.h"
#include "load/page_poller.h"
#include "load/prom_text.h"

namespace veil {
namespace {
using json = nlohmann::json;

const char* kStages[] = {"queue_wait", "decode", "preprocess", "detect", "track", "mosaic", "encode", "send"};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5));
  return v[i];
}

// One session of the stage: publisher, viewer, and the send/receive log.
struct LoadSession {
  std::string id;
  std::unique_ptr<ApiClient> api;  // bound to the node that holds the session (after any 307)
  std::string node;                // that node's URL
  std::unique_ptr<RtpPublisher> pub;
  std::unique_ptr<RtpViewer> viewer;
  std::mutex mu;
  std::unordered_map<uint32_t, double> sent;  // RTP ts -> send time; guarded by mu
  std::deque<uint32_t> order;                 // eviction order; guarded by mu
  std::vector<double> latencies;              // in the window; guarded by mu
  int received = 0, sent_in_window = 0;       // guarded by mu
  double first_sent = 0, last_sent = 0;       // guarded by mu
  int64_t frames_sent = 0;                    // guarded by mu
  // Where its frame schedule began: the earliest of its first 5 frames' sends less their place
  // in it (a publisher woken late sends its first frame late, not its schedule). guarded by mu
  double schedule0 = 0;
  double frame_ms = 1000.0 / 30;  // the clip's frame interval (set at creation)
  double window_from = 1e300, window_to = 1e300;  // guarded by mu
  void OnSent(uint32_t ts, double ms) {
    std::lock_guard lk(mu);
    if (first_sent == 0) first_sent = schedule0 = ms;
    if (frames_sent < 5) schedule0 = std::min(schedule0, ms - double(frames_sent) * frame_ms);
    last_sent = ms;
    ++frames_sent;
    sent[ts] = ms;
    order.push_back(ts);
    if (order.size() > 1200) {
      sent.erase(order.front());
      order.pop_front();
    }
    if (ms >= window_from && ms < window_to) ++sent_in_window;
  }
  void OnArrival(uint32_t ts, double ms) {
    std::lock_guard lk(mu);
    if (ms < window_from || ms >= window_to) return;
    ++received;
    auto it = sent.find(ts);
    if (it != sent.end()) latencies.push_back(ms - it->second);
  }
};

// The stage's sessions the server itself ended (load shedding's last level, a failure): id ->
// the session_ended event's detail, from each node's event log (GET /v1/events, through a
// session's own client: it is bound to that session's node). The tool's own DELETEs are not
// among them: they come after.
std::map<std::string, std::string> EndedByServer(const std::vector<std::unique_ptr<LoadSession>>& sessions) {
  std::map<std::string, std::string> ended;
  std::set<std::string> asked;
  std::set<std::string> ids;
  for (const auto& s : sessions) ids.insert(s->id);
  for (const auto& s : sessions) {
    if (!s->api || !asked.insert(s->node).second) continue;
    auto r = s->api->Call("GET", "/v1/events");
    if (!r || r->status != 200 || !r->body.contains("events")) continue;
    for (const auto& e : r->body["events"]) {
      if (e.value("type", "") != "session_ended") continue;
      const std::string id = e.value("session", "");
      if (ids.count(id)) ended[id] = e.value("detail", "");
    }
  }
  return ended;
}

// Creates a stage's n sessions through the entry URL (ids id_prefix + index), each with an RTP
// viewer and a publisher whose start is staggered over one GOP (gop_ms), its frame phase as
// o.frame_phase asks (frame_ms: the clip's frame interval). With o.run_admitted, a
// 503 after the first session ends the creation: the remaining ones are offered too and must be
// refused (res.refused, res.refusal). Returns why the stage cannot run, or "".
std::string CreateSessions(const LoadOptions& o, const ClipPtr& clip, VideoCodec codec, double gop_ms,
                           double frame_ms, const std::string& id_prefix, int n,
                           std::vector<std::unique_ptr<LoadSession>>& sessions, std::set<std::string>& ours,
                           StageResult& res) {
  // aligned / spread / drift: every start is an instant on one time line from here, a whole
  // number of frames into the stagger (plus i/n of a frame but when aligned); a session whose creation ran past
  // its instant starts whole GOPs later, which keeps both its keyframe stagger and its phase.
  const double t0 = NowMs() + 100;
  // drift: clocks apart by `step` ppm from one session to the next, so that neighbours drift a
  // whole frame interval apart over the measured window and every pair passes through every
  // phase (alignment included) while it is measured.
  double step_ppm = 1e6 * frame_ms / (1000.0 * std::max(1.0, o.stage_seconds - o.warmup_seconds));
  if (n > 1) step_ppm = std::min(step_ppm, 50000.0 / (0.5 * double(n - 1)));
  for (int i = 0; i < n; ++i) {
    auto s = std::make_unique<LoadSession>();
    s->frame_ms = frame_ms;
    s->id = id_prefix + std::to_string(i);
    json req = {{"id", s->id}, {"codec", clip->info.video_codec}, {"audio", false}};
    if (!o.mode.empty()) req["mode"] = o.mode;
    // Each session through the entry URL on its own client: a cluster's 307 binds that client
    // to the node that takes the session (its viewer and DELETE go there); `api` stays on the entry.
    auto sc = ApiClient::Create(o.server, o.token);
    if (!sc) return sc.error();
    s->api = std::move(*sc);
    auto r = s->api->Call("POST", "/v1/sessions", req);
    if (!r) return r.error();
    if (r->status == 503 && o.run_admitted && i > 0) {
      // The node is full: the admitted run the stage; each remaining one is offered as well,
      // and must be refused the same way (before any media).
      res.refused = 1;
      res.refusal = r->error();
      for (int k = i + 1; k < n; ++k) {
        auto more = ApiClient::Create(o.server, o.token);
        if (!more) return more.error();
        json again = req;
        again["id"] = id_prefix + std::to_string(k);
        auto rk = (*more)->Call("POST", "/v1/sessions", again);
        if (!rk) return rk.error();
        if (rk->status == 201) {
          (*more)->Call("DELETE", "/v1/sessions/" + again["id"].get<std::string>());
          return fmt::format("the server admitted session {} of {} after refusing session {}", k + 1, n, i + 1);
        }
        if (rk->status != 503)
          return fmt::format("session {} of {}: HTTP {} where 503 was expected: {}", k + 1, n, rk->status, rk->error());
        ++res.refused;
      }
      return "";
    }
    if (r->status != 201)
      return "the server refused session " + std::to_string(i + 1) + " of " + std::to_string(n) + ": " + r->error();
    ours.insert(s->id);
    s->node = s->api->url();
    LoadSession* raw = s.get();
    sessions.push_back(std::move(s));
    ViewerConfig vc;
    vc.codec = codec;
    vc.audio = false;
    auto v = RtpViewer::Start(vc, {}, [raw](uint32_t ts, double ms, size_t, bool) { raw->OnArrival(ts, ms); });
    if (!v) return v.error();
    raw->viewer = std::move(*v);
    auto vr = raw->api->Call("POST", "/v1/sessions/" + raw->id + "/viewers",
                             {{"host", "127.0.0.1"}, {"video_port", raw->viewer->video_port()}});
    if (!vr || vr->status != 201) return "cannot add a viewer: " + (vr ? vr->error() : vr.error());
    PublisherConfig pc;
    pc.host = r->body["ingest"]["host"];
    pc.video_port = r->body["ingest"]["video_port"];
    pc.start_delay_ms = gop_ms * double(i) / double(n);
    if (o.frame_phase != "created") {
      double at = t0 + std::round(pc.start_delay_ms / frame_ms) * frame_ms;
      if (o.frame_phase != "aligned") at += frame_ms * double(i) / double(n);  // spread, drift
      const double gop_frames_ms = std::max(1.0, std::round(gop_ms / frame_ms)) * frame_ms;
      while (at < NowMs() + 20) at += gop_frames_ms;
      pc.start_at_ms = at;
      if (o.frame_phase == "drift") pc.clock_ppm = (double(i) - 0.5 * double(n - 1)) * step_ppm;
    }
    auto p = RtpPublisher::Start(clip, pc, [raw](uint32_t ts, double ms) { raw->OnSent(ts, ms); });
    if (!p) return p.error();
    raw->pub = std::move(*p);
  }
  return "";
}

}  // namespace

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
            {"processing_ms", {{"mean", proc_mean_ms}, {"p99", proc_p99_ms}}},
            {"stale_drop_pct", stale_pct},
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
  using NodeMetrics = std::map<std::string, std::vector<PromSample>>;
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
    std::vector<std::unique_ptr<LoadSession>> sessions;
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
    PagePollCounts page0;
    // Warm-up, then the measured window.
    const double t_start = NowMs();
    const double t_warm = t_start + o.warmup_seconds * 1000, t_end = t_start + o.stage_seconds * 1000;
    for (auto& s : sessions) {
      std::lock_guard lk(s->mu);
      s->window_from = t_warm;
      s->window_to = t_end;
    }
    std::set<std::string> node_urls = {api.url()};
    for (const auto& s : sessions) node_urls.insert(s->node);
    NodeMetrics m0;
    std::vector<ViewerCounters> v0;
    double tool_cpu0 = 0, wall0 = 0;
    bool measured = false;
    double last_check = 0, last_progress = 0;
    while (NowMs() < t_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      if (StopRequested()) {
        run.stopped = "interrupted (Ctrl-C)";
        break;
      }
      if (!measured && NowMs() >= t_warm) {
        auto m = node_metrics(node_urls);
        if (!m) {
          run.stopped = m.error();
          break;
        }
        m0 = std::move(*m);
        for (auto& s : sessions) v0.push_back(s->viewer->counters());
        tool_cpu0 = ProcessCpuMs();
        wall0 = NowMs();
        if (page) page0 = page->counts();
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
    auto m1r = node_metrics(node_urls);
    const double wall1 = NowMs(), tool_cpu1 = ProcessCpuMs();
    res.ended = EndedByServer(sessions);
    std::vector<ViewerCounters> v1;
    for (auto& s : sessions) v1.push_back(s->viewer->counters());
    const PagePollCounts page1 = page ? page->counts() : PagePollCounts{};
    page.reset();
    for (auto& s : sessions) s->pub->Stop();
    if (!m1r) {
      cleanup();
      return m1r.status();
    }
    const NodeMetrics& m1 = *m1r;
    const double window_s = (wall1 - wall0) / 1000.0;
    res.window_s = window_s;
    constexpr double kMs = 1000;  // the server exports seconds; the tables are in ms
    // Client side: FPS and end-to-end latency; server side: deltas of our sessions' series over
    // the window, each from its node's /metrics.
    std::vector<double> lat;
    double fps_sum = 0, sent_sum = 0, lost = 0, pk = 0;
    HistSnapshot proc;
    std::map<std::string, HistSnapshot> stage, node_proc;
    double in = 0, sent = 0, stale = 0, fc = 0, ingest_lost = 0;
    res.fps_worst = 1e9;
    double first0 = 0;  // session 0's frame schedule as sent: the phases' origin
    if (!sessions.empty()) {
      std::lock_guard lk(sessions[0]->mu);
      first0 = sessions[0]->schedule0;
    }
    for (size_t i = 0; i < sessions.size(); ++i) {
      LoadSession& s = *sessions[i];
      const std::vector<PromSample>& a = m0.at(s.node);
      const std::vector<PromSample>& b = m1.at(s.node);
      // A session the server ended mid-stage has no series at the end: its viewer's figures
      // count (what its viewer got), its server-side deltas cannot.
      const bool gone = res.ended.count(s.id) > 0;
      {
        std::lock_guard lk(s.mu);
        const double win = (t_end - t_warm) / 1000.0;
        const double fps = s.received / win;
        res.session_fps.push_back(fps);
        // Its clock as sent: frames over the time they took, against the file's rate.
        res.clock_ppm.push_back(s.frames_sent > 30 && s.last_sent > s.first_sent
                                    ? 1e6 * (double(s.frames_sent - 1) * frame_ms / (s.last_sent - s.first_sent) - 1.0)
                                    : 0.0);
        if (s.schedule0 > 0 && first0 > 0 && i > 0) {
          double ph = std::fmod(s.schedule0 - first0, frame_ms);
          res.frame_phases_ms.push_back(ph < 0 ? ph + frame_ms : ph);
        } else {
          res.frame_phases_ms.push_back(0);
        }
        fps_sum += fps;
        sent_sum += s.sent_in_window / win;
        res.fps_worst = std::min(res.fps_worst, fps);
        lat.insert(lat.end(), s.latencies.begin(), s.latencies.end());
        NodeFigures& nf = res.nodes[s.node];
        nf.fps_worst = nf.sessions == 0 ? fps : std::min(nf.fps_worst, fps);
        nf.fps_mean += fps;  // a sum until divided below
        ++nf.sessions;
      }
      lost += double(v1[i].rtp.lost - v0[i].rtp.lost);
      pk += double(v1[i].rtp.packets - v0[i].rtp.packets);
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
      fc += d("veil_session_fail_closed_frames_total");
      ingest_lost += d("veil_session_rtp_lost_packets_total");
      const double level = SumValue(b, "veil_session_shed_level", l);  // at the window's end
      res.shed_level_mean += level / double(sessions.size());
      res.shed_level_max = std::max(res.shed_level_max, level);
    }
    res.fps_mean = fps_sum / double(sessions.size());
    res.sent_fps_mean = sent_sum / double(sessions.size());
    res.e2e_p50_ms = Percentile(lat, 0.5);
    res.e2e_p99_ms = Percentile(lat, 0.99);
    res.e2e_max_ms = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
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
    res.fail_closed = fc;
    res.ingest_loss_pct = pk > 0 ? 100.0 * ingest_lost / (pk + ingest_lost) : 0;
    double out_frames = 0;
    for (const std::string& url : node_urls) {
      const double cpu = 100.0 * (SumValue(m1.at(url), "veil_process_cpu_seconds_total") -
                                  SumValue(m0.at(url), "veil_process_cpu_seconds_total")) / window_s;
      res.server_cpu_pct += cpu;
      out_frames += SumValue(m1.at(url), "veil_session_frames_sent_total") - SumValue(m0.at(url), "veil_session_frames_sent_total");
      auto it = res.nodes.find(url);
      if (it == res.nodes.end()) continue;  // the entry node took no session
      NodeFigures& nf = it->second;
      nf.server_cpu_pct = cpu;
      nf.fps_mean /= std::max(1, nf.sessions);
      nf.proc_mean_ms = node_proc[url].mean();
      nf.proc_p99_ms = node_proc[url].Quantile(0.99);
      nf.passed = nf.fps_worst > o.pass_fps && nf.proc_p99_ms < o.pass_p99_ms;
    }
    res.tool_cpu_pct = 100.0 * (tool_cpu1 - tool_cpu0) / (wall1 - wall0);
    res.server_cpu_ms_per_frame = out_frames > 0 ? res.server_cpu_pct * 10.0 * window_s / out_frames : 0;
    if (page1.rounds > 0) {
      const double shots = double(page1.snapshots - page0.snapshots);
      res.page_snapshots_per_s = shots / window_s;
      res.page_snapshot_ms = shots > 0 ? (page1.snapshot_ms_sum - page0.snapshot_ms_sum) / shots : 0;
      res.page_failures = double(page1.failures - page0.failures);
    }
    res.passed = res.fps_worst > o.pass_fps && res.proc_p99_ms < o.pass_p99_ms;
    if (!res.passed)
      res.verdict = res.fps_worst <= o.pass_fps
                        ? fmt::format("worst session received {:.1f} fps (pass: > {:.0f})", res.fps_worst, o.pass_fps)
                        : fmt::format("p99 processing latency {:.1f} ms (pass: < {:.1f})", res.proc_p99_ms, o.pass_p99_ms);
    if (!res.ended.empty()) {  // whatever the figures: a session the server ended is a failed stage
      res.passed = false;
      res.verdict = fmt::format("the server ended {} session(s) mid-stage: {}: {}", res.ended.size(),
                                res.ended.begin()->first, res.ended.begin()->second);
    }
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
