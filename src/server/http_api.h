// The control API over HTTP/1.1 (http/server.h): JSON, versioned paths,
// bearer-token auth, strict input validation. Routes (docs/api.md):
//   GET  /healthz  /readyz  /metrics
//   GET|POST /v1/sessions            GET|DELETE /v1/sessions/{id}
//   GET  /v1/sessions/{id}/stats     PUT /v1/sessions/{id}/privacy
//   POST /v1/sessions/{id}/viewers   DELETE /v1/sessions/{id}/viewers/{viewer}
//   GET  /v1/events?after=N          PUT /v1/debug/inference (fault injection, when enabled)
//   POST /whip/{id}  DELETE /whip/{id}/{resource}   POST /whep/{id}  DELETE /whep/{id}/{viewer}  (webrtc_api)
//   GET  /operator  /publish  /watch (embedded pages)
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cluster/registry.h"
#include "core/metrics.h"
#include "core/status.h"
#include "http/router.h"
#include "http/server.h"
#include "server/session_json.h"
#include "server/session_manager.h"
#include "server/webrtc_api.h"

namespace veil {

class HttpApi {
 public:
  // Binds host:port (port 0: any free port) and serves on its own threads.
  static Result<std::unique_ptr<HttpApi>> Start(SessionManager* sessions, MetricsRegistry* metrics,
                                                const ServerSettings& s);
  ~HttpApi();  // Stop()
  int port() const { return port_; }
  void Stop();
  // Joins the cluster: new sessions are placed by the registry and requests for sessions held
  // elsewhere are answered 307 (null: a standalone node). The registry outlives the API's use of it.
  void SetCluster(ClusterRegistry* c) { cluster_.store(c); }

 private:
  HttpApi() = default;
  void Routes();
  // Cluster: true when the request was answered with a redirect to another node.
  bool RedirectToNode(http::Request& req, http::Response& res);
  // A create request placed here by a reservation (placed=<this node>) was answered.
  void PlacedRequestAnswered(const http::Request& req);
  http::Router router_;
  std::unique_ptr<http::Server> http_;
  SessionManager* sessions_ = nullptr;
  MetricsRegistry* metrics_ = nullptr;
  ServerSettings settings_;
  std::unique_ptr<WebRtcRoutes> webrtc_;
  std::atomic<ClusterRegistry*> cluster_{nullptr};
  int port_ = 0;
};

}  // namespace veil
