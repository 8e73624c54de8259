#include "load/load_session.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/clock.h"

namespace veil {
using json = nlohmann::json;

void LoadSession::OnSent(uint32_t ts, double ms) {
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

void LoadSession::OnArrival(uint32_t ts, double ms) {
  std::lock_guard lk(mu);
  if (ms < window_from || ms >= window_to) return;
  ++received;
  auto it = sent.find(ts);
  if (it != sent.end()) {
    latencies.push_back(ms - it->second);
    arrivals.push_back(ms);
  }
}

std::map<std::string, std::string> EndedByServer(const LoadSessions& sessions) {
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

std::string CreateSessions(const LoadOptions& o, const ClipPtr& clip, VideoCodec codec, double gop_ms,
                           double frame_ms, const std::string& id_prefix, int n,
                           LoadSessions& sessions, std::set<std::string>& ours, StageResult& res) {
  // Every session is offered first; then the admitted ones get their viewers and publishers, with
  // their starts, phases and clocks spread over the sessions that run (with --run-admitted,
  // fewer than were offered). Spread over the offered ones, 5 sessions admitted of 8 started
  // within 5/8 of a frame interval and of a GOP, and neighbours' phases drifted from closer
  // together: the stage measured a harsher load than 5 sessions offered alone.
  std::vector<json> ingest;  // each admitted session's ingest (host, video_port)
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
      break;
    }
    if (r->status != 201)
      return "the server refused session " + std::to_string(i + 1) + " of " + std::to_string(n) + ": " + r->error();
    ours.insert(s->id);
    s->node = s->api->url();
    sessions.push_back(std::move(s));
    ingest.push_back(r->body["ingest"]);
  }
  const int m = int(sessions.size());
  // aligned / spread / drift: every start is an instant on one time line from here, a whole
  // number of frames into the stagger (plus i/m of a frame but when aligned); a session whose
  // set-up ran past its instant starts whole GOPs later, which keeps both its keyframe stagger and its phase.
  const double t0 = NowMs() + 100;
  // drift: clocks apart by `step` ppm from one session to the next, so that neighbours drift a
  // whole frame interval apart over the measured window and every pair passes through every
  // phase (alignment included) while it is measured.
  double step_ppm = 1e6 * frame_ms / (1000.0 * std::max(1.0, o.stage_seconds - o.warmup_seconds));
  if (m > 1) step_ppm = std::min(step_ppm, 50000.0 / (0.5 * double(m - 1)));
  for (int i = 0; i < m; ++i) {
    LoadSession* raw = sessions[size_t(i)].get();
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
    pc.host = ingest[size_t(i)]["host"];
    pc.video_port = ingest[size_t(i)]["video_port"];
    pc.start_delay_ms = gop_ms * double(i) / double(m);
    if (o.frame_phase != "created") {
      double at = t0 + std::round(pc.start_delay_ms / frame_ms) * frame_ms;
      if (o.frame_phase != "aligned") at += frame_ms * double(i) / double(m);  // spread, drift
      const double gop_frames_ms = std::max(1.0, std::round(gop_ms / frame_ms)) * frame_ms;
      while (at < NowMs() + 20) at += gop_frames_ms;
      pc.start_at_ms = at;
      if (o.frame_phase == "drift") pc.clock_ppm = (double(i) - 0.5 * double(m - 1)) * step_ppm;
    }
    auto p = RtpPublisher::Start(clip, pc, [raw](uint32_t ts, double ms) { raw->OnSent(ts, ms); });
    if (!p) return p.error();
    raw->pub = std::move(*p);
  }
  return "";
}

}  // namespace veil
