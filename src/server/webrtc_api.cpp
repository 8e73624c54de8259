#include "server/webrtc_api.h"


#include <algorithm>

#include "core/clock.h"
#include "server/http_util.h"

namespace veil {

WebRtcRoutes::WebRtcRoutes(SessionManager* sessions, MetricsRegistry* metrics, const WebRtcSettings& s)
    : sessions_(sessions), metrics_(metrics), s_(s) {
  for (Gate* g : {&whip_, &whep_}) {
    g->tokens = std::max(1.0, 2 * s.offers_per_s);
    g->at_ms = NowMs();
  }
}

Counter& WebRtcRoutes::Offers(const char* kind, const char* result) {
  return metrics_->GetCounter("veil_webrtc_offers_total", "WHIP/WHEP offers by outcome (ok, refused: 4xx, throttled: 429, failed: 5xx)",
                              {{"kind", kind}, {"result", result}});
}

std::string WebRtcRoutes::Admit(Gate& g) {
  {
    std::lock_guard lk(g.mu);
    const double now = NowMs();
    const double burst = std::max(1.0, 2 * s_.offers_per_s);
    g.tokens = std::min(burst, g.tokens + (now - g.at_ms) / 1000.0 * s_.offers_per_s);
    g.at_ms = now;
    if (g.tokens < 1) return "too many offers (webrtc.offers_per_s = " + FormatValue(s_.offers_per_s) + ")";
    g.tokens -= 1;
  }
  if (++g.pending > s_.max_pending) {
    --g.pending;
    return "too many negotiations at once (webrtc.max_pending = " + std::to_string(s_.max_pending) + ")";
  }
  return "";
}

void WebRtcRoutes::Cors(http::Response& res) const {
  res.SetHeader("Access-Control-Allow-Origin", s_.allow_origin);
  res.SetHeader("Access-Control-Expose-Headers", "Location, Accept-Post, Retry-After");
  if (s_.allow_origin != "*") res.SetHeader("Vary", "Origin");
}

void WebRtcRoutes::Offer(const http::Request& req, http::Response& res, bool publish) {
  const char* kind = publish ? "whip" : "whep";
  Cors(res);
  const std::string& token = publish ? s_.publish_token : s_.view_token;
  if (!BearerOk(req, token)) {
    Offers(kind, "refused").Inc();
    res.SetHeader("WWW-Authenticate", "Bearer");
    return Error(res, 401, std::string(publish ? "publishing" : "watching") + " needs Authorization: Bearer <token>");
  }
  const std::string ct = req.Header("Content-Type");
  if (ct.rfind("application/sdp", 0) != 0) {
    Offers(kind, "refused").Inc();
    res.SetHeader("Accept-Post", "application/sdp");
    return Error(res, 415, "the offer must be sent as Content-Type: application/sdp");
  }
  const std::string id = req.matches[1];
  if (!publish && !sessions_->Exists(id)) {  // costs nothing: no token, no negotiation
    Offers(kind, "refused").Inc();
    return Error(res, 404, "no session '" + id + "'");
  }
  Gate& gate = publish ? whip_ : whep_;
  if (std::string why = Admit(gate); !why.empty()) {
    Offers(kind, "throttled").Inc();
    res.SetHeader("Retry-After", "1");
    return Error(res, 429, why);
  }
  struct Release {  // the slot is given back however the negotiation ends, an exception included
    std::atomic<int>& pending;
    ~Release() { --pending; }
  } release{gate.pending};
  WebRtcAnswer a;
  const Status e = publish ? sessions_->Publish(id, req.body, Caller(req), &a) : sessions_->Watch(id, req.body, Caller(req), &a);
  if (!e) {
    Offers(kind, HttpStatusOf(e.code()) >= 500 ? "failed" : "refused").Inc();
    return Error(res, e);
  }
  Offers(kind, "ok").Inc();
  res.status = 201;
  res.SetHeader("Location", std::string("/") + kind + "/" + a.session + "/" + a.resource);
  res.SetContent(a.sdp, "application/sdp");
}

void WebRtcRoutes::Register(http::Router& h) {
  for (const bool publish : {true, false}) {
    const std::string base = publish ? "/whip/" : "/whep/";
    const std::string sid = base + "([A-Za-z0-9_-]{1,64})";
    const std::string rid = sid + "/([A-Za-z0-9]{1,16})";
    h.Post(sid, [this, publish](const http::Request& req, http::Response& res) { Offer(req, res, publish); });
    h.Delete(rid, [this, publish](const http::Request& req, http::Response& res) {
      Cors(res);
      if (!BearerOk(req, publish ? s_.publish_token : s_.view_token)) {
        res.SetHeader("WWW-Authenticate", "Bearer");
        return Error(res, 401, "missing or wrong bearer token");
      }
      const std::string id = req.matches[1], resource = req.matches[2];
      Status e;
      if (publish) {
        e = sessions_->Unpublish(id, resource, Caller(req));
      } else {
        SessionInfo info;
        const bool web = sessions_->Get(id, &info).ok() &&
                         std::any_of(info.viewers.begin(), info.viewers.end(),
                                     [&](const ViewerInfo& v) { return v.id == resource && v.kind == ViewerKind::kWebRtc; });
        e = web ? sessions_->RemoveViewer(id, resource, Caller(req))
                : Status::Error(StatusCode::kNotFound, "no WHEP resource '" + resource + "' in session '" + id + "'");
      }
      if (!e) return Error(res, e);
      res.status = 200;
    });
    h.Patch(rid, [this](const http::Request&, http::Response& res) {
      Cors(res);
      res.SetHeader("Allow", "DELETE, OPTIONS");
      Error(res, 405, "trickle ICE and ICE restarts are not supported: send a complete offer (non-trickle)");
    });
    for (const std::string& path : {sid, rid}) {
      h.Options(path, [this, path, rid](const http::Request&, http::Response& res) {
        Cors(res);
        const bool resource = path == rid;
        res.SetHeader("Access-Control-Allow-Methods", resource ? "DELETE, OPTIONS" : "POST, OPTIONS");
        res.SetHeader("Access-Control-Allow-Headers", "Authorization, Content-Type, If-Match");
        res.SetHeader("Access-Control-Max-Age", "600");
        if (!resource) res.SetHeader("Accept-Post", "application/sdp");
        res.status = 204;
      });
    }
  }
}

}  // namespace veil
