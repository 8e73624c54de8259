// The server's and the worker's own rules: the ranges of their keys, declared here once, and
// the rules between keys. The stages they start check their own structs (Validate(SchedulerConfig),
// Validate(RouterConfig) ...).
#include <arpa/inet.h>

#include <cctype>
#include <string>

#include "config/config.h"
#include "media/codec.h"

namespace veil {
namespace {
Status InRange(double x, double lo, double hi, const char* what) {
  return !(x >= lo && x <= hi) ? Status::Error(std::string(what) + " must be in [" + FormatValue(lo) + ", " +
                                               FormatValue(hi) + "], got " + FormatValue(x))
                               : Status::Ok();
}
Status InRange(int x, int lo, int hi, const char* what) {
  return (x < lo || x > hi) ? Status::Error(std::string(what) + " must be in [" + std::to_string(lo) + ", " +
                                            std::to_string(hi) + "], got " + std::to_string(x))
                            : Status::Ok();
}
Status TokenRule(const std::string& tok, const char* key) {
  if (!tok.empty() && tok.size() < 16) return Status::Error(std::string(key) + " must be at least 16 characters");
  for (char c : tok)
    if (c <= ' ' || c > '~') return Status::Error(std::string(key) + " must be printable ASCII without spaces");
  return Status::Ok();
}
}  // namespace

// The rest of [inference] (targets, remote_model, remote_threads, deadline_ms, probe_*) is the AI
// router's to check (Validate(RouterConfig), when veil serve starts its targets).
Status Validate(const ServerSettings& v) {
  const auto in = [](auto x, auto lo, auto hi, const char* what) { return InRange(x, lo, hi, what); };
  const std::string listen = v.listen_host + ":" + std::to_string(v.listen_port);
  const bool loopback = v.listen_host.rfind("127.", 0) == 0 || v.listen_host == "localhost" || v.listen_host == "::1";
  if (!loopback && v.token.empty())
    return Status::Error("server.listen " + listen + " is not loopback: set server.token (bearer token) first");
  for (Status st : {TokenRule(v.token, "server.token"), TokenRule(v.webrtc.publish_token, "webrtc.publish_token"),
                    TokenRule(v.webrtc.view_token, "webrtc.view_token")})
    if (!st) return st;
  if (v.max_sessions != 0)
    if (Status st = in(v.max_sessions, 1, 1024, "server.max_sessions"); !st) return st;
  for (Status st : {in(v.cores, 0.0, 4096.0, "server.cores"), in(v.cpu_share, 0.05, 1.0, "server.cpu_share"),
                    in(v.admit_p99_ms, 0.0, 1000.0, "server.admit_p99_ms"),
                    in(v.admit_speed_step, 0, VideoEncoder::kMaxSpeedSteps - 1, "server.admit_speed_step"),
                    in(v.retime_s, 0.0, 86400.0, "server.retime_s"),
                    in(v.retime_first_s, 0.0, 86400.0, "server.retime_first_s"),
                    in(v.drain_timeout_s, 0.0, 86400.0, "server.drain_timeout_s"),
                    in(v.max_viewers, 1, 1024, "server.max_viewers"), in(v.viewer_queue, 1, 256, "server.viewer_queue"),
                    in(v.jitter_ms, 0, 2000, "server.jitter_ms"), in(v.budget_ms, 1.0, 10000.0, "server.budget_ms"),
                    in(v.burst_allowance_ms, 0.0, 1000.0, "server.burst_allowance_ms"),
                    in(v.publisher_timeout_ms, 100.0, 3600000.0, "server.publisher_timeout_ms"),
                    in(v.start_timeout_ms, 100.0, 3600000.0, "server.start_timeout_ms"),
                    in(v.history_s, 1.0, 86400.0, "server.history_s"),
                    in(v.history_interval_ms, 250.0, 60000.0, "server.history_interval_ms"),
                    in(v.http_max_connections, 16, 1000000, "server.http_max_connections"),
                    in(v.http_threads, 1, 256, "server.http_threads"), in(v.frame_threads, 0, 1024, "server.frame_threads"),
                    in(v.http_request_timeout_ms, 100.0, 600000.0, "server.http_request_timeout_ms"),
                    in(v.http_idle_timeout_ms, 100.0, 3600000.0, "server.http_idle_timeout_ms"),
                    in(v.shed_calm_s, 1.0, 600.0, "server.shed_calm_s"),
                    in(v.shed_warmup_s, 0.0, 600.0, "server.shed_warmup_s"),
                    in(v.shed_low_with_room, 0.01, 5.0, "server.shed_low_with_room"),
                    in(v.webrtc.max_pending, 1, 256, "webrtc.max_pending"),
                    in(v.webrtc.offers_per_s, 0.1, 10000.0, "webrtc.offers_per_s"),
                    in(v.webrtc.start_bitrate_kbps, 0, 50000, "webrtc.start_bitrate_kbps"),
                    in(v.webrtc.jitter_ms, 0, 2000, "webrtc.jitter_ms"),
                    in(v.webrtc.negotiate_timeout_ms, 100.0, 60000.0, "webrtc.negotiate_timeout_ms"),
                    in(v.webrtc.connect_timeout_ms, 1000.0, 600000.0, "webrtc.connect_timeout_ms"),
                    Validate(v.scheduler)})
    if (!st) return st;
  if (!(v.shed_low > 0 && v.shed_low < v.shed_high && v.shed_high <= 5))
    return Status::Error("server.shed_low and server.shed_high need 0 < shed_low < shed_high <= 5");
  if (v.history_s * 1000 / v.history_interval_ms > 100000 || v.history_s * 1000 < v.history_interval_ms)
    return Status::Error("server.history_s / server.history_interval_ms must keep 1..100000 points per session");
  if (!v.cluster_redis.empty() && v.cluster_redis.rfind("redis://", 0) != 0)
    return Status::Error("cluster.redis must be redis://HOST:PORT[/DB], got '" + v.cluster_redis + "'");
  for (char c : v.cluster_node_id)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return Status::Error("cluster.node_id must be letters, digits, - _ . only, got '" + v.cluster_node_id + "'");
  if (!v.cluster_public_url.empty() && v.cluster_public_url.rfind("http://", 0) != 0 &&
      v.cluster_public_url.rfind("https://", 0) != 0)
    return Status::Error("cluster.public_url must start with http:// or https://, got '" + v.cluster_public_url + "'");
  if (v.webrtc.allow_origin.empty() || v.webrtc.allow_origin.find_first_of("\r\n") != std::string::npos)
    return Status::Error("webrtc.allow_origin must be '*' or an origin such as https://example.com");
  in_addr ia{};
  if (inet_pton(AF_INET, v.webrtc.ice_address.c_str(), &ia) != 1)
    return Status::Error("webrtc.ice_address must be a numeric IPv4 address, got '" + v.webrtc.ice_address + "'");
  return Status::Ok();
}

Status Validate(const WorkerSettings& w) {
  const size_t colon = w.listen.rfind(':');
  const std::string port = colon == std::string::npos ? "" : w.listen.substr(colon + 1);
  if (colon == std::string::npos || colon == 0 || port.empty())
    return Status::Error("worker.listen must be HOST:PORT, got '" + w.listen + "'");
  if (port.find_first_not_of("0123456789") != std::string::npos || port.size() > 5 || std::stoi(port) > 65535)
    return Status::Error("worker.listen port must be in [0, 65535], got '" + w.listen + "'");
  return Validate(w.scheduler);
}

}  // namespace veil
