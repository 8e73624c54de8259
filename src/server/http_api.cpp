#include "server/http_api.h"


#include <charconv>
#include <set>

#include <spdlog/spdlog.h>

#include "core/clock.h"
#include "server/http_util.h"
#include "server/sdp.h"
#include "server/web_pages.h"

namespace veil {
namespace {

using json = nlohmann::json;

// Parses a JSON object body, refusing fields not in `allowed` (a typo is an error, not a default).
bool ParseBody(const http::Request& req, http::Response& res, const std::vector<std::string>& allowed,
               json* out, bool required = true) {
  // JSON only: a browser sends text/plain or a form cross-site without asking first (no CORS preflight).
  if (!req.body.empty() && req.Header("Content-Type").rfind("application/json", 0) != 0) {
    Error(res, 415, "the body must be sent as Content-Type: application/json");
    return false;
  }
  if (req.body.empty()) {
    if (required) {
      Error(res, 400, "a JSON object body is required");
      return false;
    }
    *out = json::object();
    return true;
  }
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    Error(res, 400, "body is not a JSON object");
    return false;
  }
  for (const auto& [k, v] : j.items()) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      Error(res, 400, "unknown field '" + k + "'");
      return false;
    }
  }
  *out = std::move(j);
  return true;
}

bool GetString(const json& j, const char* key, http::Response& res, std::string* out) {
  if (!j.contains(key)) return true;
  if (!j[key].is_string()) {
    Error(res, 400, std::string("field '") + key + "' must be a string");
    return false;
  }
  *out = j[key].get<std::string>();
  return true;
}

bool GetPort(const json& j, const char* key, http::Response& res, int* out, bool required) {
  if (!j.contains(key)) {
    if (required) Error(res, 400, std::string("field '") + key + "' is required");
    return !required;
  }
  if (!j[key].is_number_integer() || j[key].get<int64_t>() < 1 || j[key].get<int64_t>() > 65535) {
    Error(res, 400, std::string("field '") + key + "' must be an integer port in [1, 65535]");
    return false;
  }
  *out = j[key].get<int>();
  return true;
}

bool GetBool(const json& j, const char* key, http::Response& res, bool* out) {
  if (!j.contains(key)) return true;
  if (!j[key].is_boolean()) {
    Error(res, 400, std::string("field '") + key + "' must be true or false");
    return false;
  }
  *out = j[key].get<bool>();
  return true;
}

}  // namespace

Result<std::unique_ptr<HttpApi>> HttpApi::Start(SessionManager* sessions, MetricsRegistry* metrics,
                                                const ServerSettings& s) {
  std::unique_ptr<HttpApi> api(new HttpApi());
  api->sessions_ = sessions;
  api->metrics_ = metrics;
  api->settings_ = s;
  api->Routes();
  http::Limits lim;
  lim.max_connections = s.http_max_connections;
  lim.idle_timeout_ms = s.http_idle_timeout_ms;
  lim.header_timeout_ms = lim.body_timeout_ms = lim.write_timeout_ms = s.http_request_timeout_ms;
  lim.max_body_bytes = 64 * 1024;
  lim.threads = s.http_threads;
  // Each connection is one descriptor; sessions, pipelines and sockets need their own beyond it.
  const long want = long(lim.max_connections) + 1024;
  if (const long got = http::RaiseFileLimit(want); got < want)
    spdlog::warn("open-file limit is {} (hard limit), below the {} that server.http_max_connections = {} needs; "
                 "past it new connections wait in the kernel's queue",
                 got, want, lim.max_connections);
  auto server = http::Server::Start(&api->router_, s.listen_host, s.listen_port, lim, metrics);
  if (!server) return server.status();
  api->http_ = std::move(*server);
  api->port_ = api->http_->port();
  return api;
}

HttpApi::~HttpApi() { Stop(); }

void HttpApi::Stop() {
  if (http_) http_->Stop();
}

void HttpApi::Routes() {
  http::Router& h = router_;
  h.SetGuard([this](http::Request& req, http::Response& res) {
    // The pages hold no data (their scripts call the API with the token), so they load without one.
    // WHIP and WHEP check their own tokens (webrtc.publish_token / view_token).
    static const std::set<std::string> kOpen = {"/healthz", "/readyz", "/", "/operator", "/publish",
                                                "/watch",   "/webrtc.js", "/favicon.ico"};
    const bool webrtc = req.path.rfind("/whip/", 0) == 0 || req.path.rfind("/whep/", 0) == 0;
    // DNS rebinding: a page of another site whose name now resolves to this server sends its own Host.
    if (!HostAllowed(req.Header("Host"), settings_.allowed_hosts)) {
      Error(res, 403, "Host '" + HostName(req.Header("Host")) +
                          "' is not this server's (IP literals, localhost and server.allowed_hosts are)");
      return true;
    }
    // Cross-site requests may not change state; WHIP/WHEP answer CORS as their specifications want.
    if (!webrtc && req.method != "GET" && req.method != "HEAD" && req.method != "OPTIONS" && !SameOrigin(req)) {
      Error(res, 403, "cross-origin request refused (Origin " + req.Header("Origin") + ")");
      return true;
    }
    const bool open = kOpen.count(req.path) || webrtc;
    if (open || BearerOk(req, settings_.token)) return RedirectToNode(req, res);
    res.SetHeader("WWW-Authenticate", "Bearer");
    Error(res, 401, "missing or wrong bearer token");
    return true;
  });
  h.SetAfter([this](const http::Request& req, const http::Response&) { PlacedRequestAnswered(req); });
  h.SetErrorBody([](const http::Request& req, http::Response& res, const std::string& detail) {
    if (res.status == 404) Error(res, 404, "no route " + req.method + " " + req.path);
    else if (res.status == 405) Error(res, 405, "method " + req.method + " not allowed on " + req.path + " (allowed: " + res.Header("Allow") + ")");
    else if (res.status == 500) Error(res, 500, "internal error" + (detail.empty() ? std::string() : ": " + detail));
    else Error(res, res.status, "request failed");
  });

  h.Get("/healthz", [](const http::Request&, http::Response& res) { Reply(res, 200, {{"status", "ok"}}); }, true);
  h.Get("/", [](const http::Request&, http::Response& res) { res.Redirect("/operator", 302); });
  h.Get("/favicon.ico", [](const http::Request&, http::Response& res) { res.status = 204; });
  // Same-origin only: each page's own inline script and style, this server's API and WHIP/WHEP.
  for (const auto& [path, page] : {std::pair<const char*, std::string_view>{"/operator", OperatorPage()},
                                   {"/publish", PublishPage()},
                                   {"/watch", WatchPage()}}) {
    h.Get(path, [this, page = page](const http::Request&, http::Response& res) {
      // In a cluster a WHIP offer may be redirected to another node: the page may connect there.
      std::vector<std::string> nodes;
      if (ClusterRegistry* c = cluster_.load())
        for (const NodeRecord& n : c->Nodes()) nodes.push_back(n.url.substr(0, n.url.find('/', n.url.find("://") + 3)));
      PageHeaders(res, nodes);
      res.SetContent(std::string(page), "text/html; charset=utf-8");
    });
  }
  h.Get("/webrtc.js", [](const http::Request&, http::Response& res) {
    PageHeaders(res);
    const std::string_view js = WebRtcScript();
    res.SetContent(std::string(js), "text/javascript; charset=utf-8");
  });
  webrtc_ = std::make_unique<WebRtcRoutes>(sessions_, metrics_, settings_.webrtc);
  webrtc_->Register(h);
  h.Get("/readyz", [this](const http::Request&, http::Response& res) {
    const std::string why = sessions_->NotReadyReason();
    const CapacityState c = sessions_->Capacity();
    json body = {{"ready", why.empty()},
                 {"sessions", sessions_->session_count()},
                 {"headroom", c.headroom},
                 {"capacity",
                  {{"sessions", c.capacity_sessions},
                   {"kind", c.default_kind},
                   {"max_sessions", c.max_sessions > 0 ? json(c.max_sessions) : json("auto")},
                   {"cores", c.cores},
                   {"cpu_budget_ms_per_s", c.budget_ms_per_s},
                   {"cpu_load_ms_per_s", c.load_ms_per_s},
                   {"transcode_ms", c.transcode_ms},
                   {"limit_sessions", c.limit_sessions},
                   {"cost_ratio", c.ratio},
                   {"cost_learned", c.learned},
                   {"cost_saturated_seconds", c.saturated_seconds}}}};
    json costs = json::array();
    for (const CapacityModel::Cost& k : c.costs)
      costs.push_back({{"codec", Name(k.codec)}, {"mode", ModeName(k.mode)}, {"cpu_per_frame_vs_transcode", k.ratio},
                       {"cpu_ms_per_720p_frame", k.cpu_ms},
                       {"planned_cpu_ms_per_720p_frame", k.planned_ms}, {"samples", k.samples}});
    body["capacity"]["transcode_ms_by_codec"] = c.transcode_ms_by_codec;
    body["capacity"]["transcode_timings_ms_by_codec"] = c.kept_timings_by_codec;  // the figure: the cheapest
    body["capacity"]["transcode_last_timing_ms_by_core"] = c.last_timing_by_core;  // the last timing's cores
    body["capacity"]["retimes"] = c.retimes;
    body["capacity"]["prior_detection_extra_ms"] = c.prior_detection_extra_ms;
    body["capacity"]["admit_speed_step"] = c.plan_speed_step;
    body["capacity"]["admit_speed_step_by_codec"] = c.plan_step_by_codec;  // held to each codec's ladder
    if (!c.memory.empty()) body["capacity"]["memory"] = c.memory;  // server.capacity_state
    body["capacity"]["admit_encode_ratio_by_codec"] = c.plan_encode_ratio_by_codec;
    body["capacity"]["admit_encode_ratio_paired_samples_by_codec"] = c.paired_plan_ratio_samples_by_codec;
    const auto by_step = [](const std::map<std::string, std::vector<CapacityState::EncodeStep>>& by_codec) {
      json enc = json::object();
      for (const auto& [codec, steps] : by_codec) {
        json a = json::array();
        for (const CapacityState::EncodeStep& e : steps)
          a.push_back({{"step", e.step}, {"encode_ms", e.ms}, {"samples", e.samples}});
        enc[codec] = a;
      }
      return enc;
    };
    body["capacity"]["encode_ms_by_step"] = by_step(c.encode_by_codec);
    // full_blur's whole-frame mosaic, learned apart: its measured steps and the share planned.
    body["capacity"]["mosaic_encode_ms_by_step"] = by_step(c.mosaic_encode_by_codec);
    body["capacity"]["mosaic_admit_encode_ratio_by_codec"] = c.mosaic_plan_encode_ratio_by_codec;
    body["capacity"]["costs"] = costs;
    if (ClusterRegistry* cluster = cluster_.load())
      body["cluster"] = {{"node", cluster->settings().node_id}, {"url", cluster->settings().public_url},
                         {"state", cluster->degraded() ? "degraded" : "ok"}, {"detail", cluster->status()}};
    if (!why.empty()) body["reason"] = why;
    Reply(res, why.empty() ? 200 : 503, body);
  });
  h.Get("/metrics", [this](const http::Request&, http::Response& res) {
    res.SetContent(metrics_->ExportText(), "text/plain; version=0.0.4; charset=utf-8");
  });

  h.Get("/v1/targets", [this](const http::Request&, http::Response& res) {
    json list = json::array();
    for (const TargetState& t : sessions_->Targets())
      list.push_back({{"name", t.name},
                      {"healthy", t.healthy},
                      {"active_streams", t.active_streams},
                      {"latency_ms", t.latency_ms},
                      {"down_reason", t.down_reason}});
    Reply(res, 200, {{"targets", list}});
  });
  h.Get("/v1/sessions", [this](const http::Request&, http::Response& res) {
    json list = json::array();
    ClusterRegistry* cluster = cluster_.load();
    for (const SessionInfo& s : sessions_->List()) {
      list.push_back(SessionJson(s, false));
      if (cluster) list.back()["node"] = cluster->settings().node_id;
    }
    // In a cluster: every other node's sessions too, with the node that holds them.
    if (cluster)
      for (const NodeRecord& n : cluster->Nodes())
        if (n.id != cluster->settings().node_id)
          for (const std::string& id : n.state.session_ids)
            list.push_back({{"id", id}, {"node", n.id}, {"node_url", n.url}, {"remote", true}});
    Reply(res, 200, {{"sessions", list}});
  });
  // Drain: no new sessions here; running ones go on (veil serve exits once they are gone or
  // server.drain_timeout_s passed). SIGTERM does the same.
  h.Post("/v1/drain", [this](const http::Request& req, http::Response& res) {
    sessions_->Drain(Caller(req));
    if (ClusterRegistry* cluster = cluster_.load()) cluster->Beat();  // placement sees it now
    Reply(res, 202, {{"draining", true}, {"sessions", sessions_->session_count()},
                     {"drain_timeout_s", settings_.drain_timeout_s}});
  });
  h.Post("/v1/sessions", [this](const http::Request& req, http::Response& res) {
    json b;
    if (!ParseBody(req, res, {"id", "codec", "mode", "audio"}, &b, false)) return;
    CreateSpec spec;
    std::string codec = Name(spec.codec);
    if (!GetString(b, "id", res, &spec.id) || !GetString(b, "codec", res, &codec) ||
        !GetString(b, "mode", res, &spec.mode) || !GetBool(b, "audio", res, &spec.audio))
      return;
    auto vc = ParseVideoCodec(codec);  // the codec's name is parsed here, once
    if (!vc) return Error(res, vc.status());
    spec.codec = *vc;
    SessionInfo info;
    if (Status e = sessions_->Create(spec, Caller(req), &info); !e) return Error(res, e);
    res.SetHeader("Location", "/v1/sessions/" + info.id);
    Reply(res, 201, SessionJson(info, false));
  });
  const std::string sid = "/v1/sessions/([A-Za-z0-9_-]{1,64})";
  h.Get(sid, [this](const http::Request& req, http::Response& res) {
    SessionInfo info;
    if (Status e = sessions_->Get(req.matches[1], &info); !e) return Error(res, e);
    Reply(res, 200, SessionJson(info, true));
  });
  h.Delete(sid, [this](const http::Request& req, http::Response& res) {
    if (Status e = sessions_->Delete(req.matches[1], Caller(req)); !e) return Error(res, e);
    res.status = 204;
  });
  h.Get(sid + "/stats", [this](const http::Request& req, http::Response& res) {
    SessionInfo info;
    if (Status e = sessions_->Get(req.matches[1], &info); !e) return Error(res, e);
    Reply(res, 200, StatsJson(info));
  });
  // The outgoing picture for people (the operator page's thumbnails): after the privacy stage,
  // exactly what viewers get. Made on request from the last processed frame.
  h.Get(sid + "/snapshot.jpg", [this](const http::Request& req, http::Response& res) {
    int width = kSnapshotMaxWidth;
    if (req.HasParam("width")) {
      const std::string w = req.Param("width");
      auto r = std::from_chars(w.data(), w.data() + w.size(), width);
      if (w.empty() || r.ec != std::errc() || r.ptr != w.data() + w.size() || width < 16 || width > kSnapshotMaxWidth)
        return Error(res, 400, "'width' must be an integer in [16, " + std::to_string(kSnapshotMaxWidth) + "]");
    }
    SessionSnapshot snap;
    if (Status e = sessions_->Snapshot(req.matches[1], width, &snap); !e) return Error(res, e, 1);
    res.SetHeader("Cache-Control", "no-store");
    res.SetHeader("X-Veil-Frame", std::to_string(snap.frame));
    res.SetHeader("X-Veil-Mode", ModeName(snap.mode));
    res.SetHeader("X-Veil-Fail-Closed", snap.fail_closed ? "1" : "0");
    res.SetHeader("X-Veil-Frame-Age-Ms", std::to_string(int64_t(snap.age_ms)));
    res.SetContent(std::string(snap.image.bytes.begin(), snap.image.bytes.end()), "image/jpeg");
  });
  // The session's figures over the last server.history_s, one point per interval, as columns.
  h.Get(sid + "/history", [this](const http::Request& req, http::Response& res) {
    std::vector<HistoryPoint> pts;
    if (Status e = sessions_->History(req.matches[1], &pts); !e) return Error(res, e);
    json t = json::array(), fps = json::array(), p99 = json::array(), fc = json::array(), stale = json::array();
    for (const HistoryPoint& p : pts) {
      t.push_back(int64_t(p.t_unix_ms));
      fps.push_back(p.received_fps);
      p99.push_back(p.processing_p99_ms < 0 ? json(nullptr) : json(p.processing_p99_ms));
      fc.push_back(p.fail_closed_per_s);
      stale.push_back(p.stale_per_s);
    }
    Reply(res, 200, {{"id", std::string(req.matches[1])},
                     {"window_s", settings_.history_s},
                     {"interval_ms", settings_.history_interval_ms},
                     {"points", pts.size()},
                     {"t_unix_ms", t},
                     {"received_fps", fps},
                     {"processing_p99_ms", p99},
                     {"fail_closed_per_s", fc},
                     {"stale_drops_per_s", stale}});
  });
  h.Put(sid + "/privacy", [this](const http::Request& req, http::Response& res) {
    json b;
    if (!ParseBody(req, res, {"mode"}, &b)) return;
    std::string mode;
    if (!GetString(b, "mode", res, &mode)) return;
    if (mode.empty()) return Error(res, 400, "field 'mode' is required: anonymize | bypass | full_blur");
    Mode previous{};
    const std::string caller = Caller(req);
    if (Status e = sessions_->SetMode(req.matches[1], mode, caller, &previous); !e) return Error(res, e);
    Reply(res, 200, {{"id", std::string(req.matches[1])}, {"mode", mode}, {"previous", ModeName(previous)},
                     {"changed_by", caller}, {"at", UtcNowIso()}});
  });
  h.Post(sid + "/viewers", [this](const http::Request& req, http::Response& res) {
    json b;
    if (!ParseBody(req, res, {"host", "video_port", "audio_port"}, &b)) return;
    std::string host = "127.0.0.1";
    int vport = 0, aport = 0;
    if (!GetString(b, "host", res, &host) || !GetPort(b, "video_port", res, &vport, true) ||
        !GetPort(b, "audio_port", res, &aport, false))
      return;
    ViewerInfo v;
    if (Status e = sessions_->AddViewer(req.matches[1], host, vport, aport, Caller(req), &v); !e) return Error(res, e);
    SessionInfo info;
    sessions_->Get(req.matches[1], &info);
    res.SetHeader("Location", "/v1/sessions/" + std::string(req.matches[1]) + "/viewers/" + v.id);
    Reply(res, 201,
          {{"id", v.id}, {"host", v.host}, {"video_port", v.video_port}, {"audio_port", v.audio_port},
           {"sdp", MakeSdp({"veil " + info.id, v.host, info.codec, v.video_port, v.audio_port, "recvonly"})}});
  });
  h.Delete(sid + "/viewers/([A-Za-z0-9]{1,16})", [this](const http::Request& req, http::Response& res) {
    if (Status e = sessions_->RemoveViewer(req.matches[1], req.matches[2], Caller(req)); !e)
      return Error(res, e);
    res.status = 204;
  });
  h.Get("/v1/events", [this](const http::Request& req, http::Response& res) {
    uint64_t after = 0;
    if (req.HasParam("after")) {
      const std::string a = req.Param("after");
      auto r = std::from_chars(a.data(), a.data() + a.size(), after);
      if (a.empty() || r.ec != std::errc() || r.ptr != a.data() + a.size())
        return Error(res, 400, "'after' must be an event sequence number");
    }
    json list = json::array();
    for (const Event& e : sessions_->Events(after))
      list.push_back({{"seq", e.seq}, {"time", e.time}, {"type", e.type}, {"session", e.session}, {"detail", e.detail}});
    Reply(res, 200, {{"events", list}});
  });
  h.Put("/v1/debug/inference", [this](const http::Request& req, http::Response& res) {
    json b;
    if (!ParseBody(req, res, {"stall", "fail"}, &b)) return;
    bool stall = false, fail = false;
    if (!GetBool(b, "stall", res, &stall) || !GetBool(b, "fail", res, &fail)) return;
    if (Status e = sessions_->InjectFault(stall, fail, Caller(req)); !e) return Error(res, e);
    Reply(res, 200, {{"stall", stall}, {"fail", fail}});
  });
  // A CPU hog in one session's worker (fault injection): its frames leave late, and the
  // load shedding takes its levels (server/speed_control.h).
  h.Put("/v1/debug/sessions/([A-Za-z0-9_-]{1,64})/cpu_hog", [this](const http::Request& req, http::Response& res) {
    json b;
    if (!ParseBody(req, res, {"ms"}, &b)) return;
    if (!b.contains("ms") || !b["ms"].is_number() || !(b["ms"].get<double>() >= 0 && b["ms"].get<double>() <= 1000))
      return Error(res, 400, "'ms' must be a number of CPU ms per frame in [0, 1000]");
    const double ms = b["ms"].get<double>();
    if (Status e = sessions_->InjectCpuHog(req.matches[1], ms, Caller(req)); !e) return Error(res, e);
    Reply(res, 200, {{"ms", ms}});
  });
}

}  // namespace veil
