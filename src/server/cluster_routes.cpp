// The cluster's side of the HTTP API (docs/cluster.md): which requests another node should
// answer, and the 307 that sends the client there.
#include <spdlog/spdlog.h>

#include "server/http_api.h"
#include "server/http_util.h"

namespace veil {
namespace {

// A request that creates a session when none of its id exists: POST /v1/sessions, or a WHIP
// offer (POST /whip/{id}; not a request on one of its resources).
bool CreatesSession(const http::Request& req) {
  if (req.method != "POST") return false;
  if (req.path == "/v1/sessions") return true;
  return req.path.rfind("/whip/", 0) == 0 && req.path.size() > 6 && req.path.find('/', 6) == std::string::npos;
}

}  // namespace

bool HttpApi::RedirectToNode(http::Request& req, http::Response& res) {
  ClusterRegistry* cluster = cluster_.load();
  if (!cluster) return false;
  // The session a request is about, and whether it may create it.
  std::string id;
  std::string kind;  // "codec/mode" of a new session, when the request says
  bool creates = false;
  auto segment = [&](const std::string& prefix) {
    if (req.path.rfind(prefix, 0) != 0) return false;
    id = req.path.substr(prefix.size());
    id = id.substr(0, id.find('/'));
    return !id.empty();
  };
  if (req.method == "POST" && req.path == "/v1/sessions") {
    creates = true;
    // A named session that exists on another node goes there (which answers 409), not to a
    // second node under the same id.
    const auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_object() && body.contains("id") && body["id"].is_string()) id = body["id"].get<std::string>();
    // Placed by what this kind of session costs (malformed fields: the node that takes it answers 400).
    if (body.is_object()) {
      std::string codec = Name(VideoCodec::kVp8);
      if (body.contains("codec") && body["codec"].is_string()) codec = body["codec"].get<std::string>();
      std::string mode = ModeName(sessions_->deps().privacy.mode);
      if (body.contains("mode") && body["mode"].is_string()) mode = body["mode"].get<std::string>();
      kind = codec + "/" + mode;
    }
  } else if (req.method == "POST" && segment("/whip/")) {
    if (!CreatesSession(req)) return false;  // a request on an offer's resource
    creates = true;
  } else if (req.method == "POST" && segment("/whep/")) {
    if (req.path.find('/', 6) != std::string::npos) return false;
  } else if (segment("/v1/sessions/")) {
  } else if (req.method == "GET" && req.path == "/watch" && req.HasParam("session")) {
    id = req.Param("session");
  } else {
    return false;  // node-local routes; WHIP/WHEP resources are addressed on their node (Location)
  }
  auto redirect = [&](const NodeRecord& n, const std::string& extra_query) {
    std::string url = n.url + req.target;
    if (!extra_query.empty()) url += (req.target.find('?') == std::string::npos ? "?" : "&") + extra_query;
    res.Redirect(url, 307);
    res.SetHeader("Cache-Control", "no-store");
    Reply(res, 307, nlohmann::json{{"redirect", url}, {"node", n.id}});
    spdlog::info("cluster: {} {} -> 307 {} ({})", req.method, req.path, n.id, id.empty() ? "new session" : id);
  };
  if (!id.empty() && sessions_->Exists(id)) return false;  // held here
  if (!id.empty())
    if (auto holder = cluster->RemoteHolder(id)) {
      redirect(*holder, "");
      return true;
    }
  // A new session, unless another node already placed it here.
  if (!creates || req.HasParam("placed")) return false;
  const ClusterRegistry::Placement p = cluster->PlaceNew(kind);
  if (p.local) {
    // Marked as a request that another node placed here would be: once answered, the
    // reservation is taken back (PlacedRequestAnswered).
    if (p.reserved) req.params.emplace_back("placed", cluster->settings().node_id);
    return false;
  }
  redirect(p.node, "placed=" + p.node.id);
  return true;
}

void HttpApi::PlacedRequestAnswered(const http::Request& req) {
  ClusterRegistry* cluster = cluster_.load();
  if (cluster && CreatesSession(req) && req.Param("placed") == cluster->settings().node_id)
    cluster->PlacedRequestAnswered();
}

}  // namespace veil
