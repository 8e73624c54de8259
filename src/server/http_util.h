// Small helpers shared by the HTTP route files (control API, WHIP/WHEP).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "http/message.h"

namespace veil {

void Reply(http::Response& res, int status, const nlohmann::json& body);
// A JSON error body {"error": why}.
void Error(http::Response& res, int status, const std::string& why);
// The HTTP status of a refusal: the only place that maps StatusCode to HTTP's numbers
// (kInvalidArgument 400, kForbidden 403, kNotFound 404, kConflict 409, kUnsupported 422,
// kUnavailable 503, kUnknown and kInternal 500).
int HttpStatusOf(StatusCode c);
// A refusal (`s` not ok): that status, {"error": message, "code": "not_found" ...}, and
// Retry-After: retry_after_s when it is kUnavailable (try later).
void Error(http::Response& res, const Status& s, int retry_after_s = 5);
// Who asked: the peer address, plus a caller name the client may give
// (X-Veil-Caller, sanitized), for the audit trail.
std::string Caller(const http::Request& req);
bool TimingSafeEqual(const std::string& a, const std::string& b);
// True when `token` is empty or the request carries "Authorization: Bearer <token>".
bool BearerOk(const http::Request& req, const std::string& token);
// The host part of a Host header ("a.example:8080" -> "a.example", "[::1]:80" -> "::1"), lower case.
std::string HostName(const std::string& host_header);
// DNS rebinding guard: a Host header that names this server: empty (no browser
// sends that), an IP literal (cannot be rebound), "localhost", or one of
// `names` (server.allowed_hosts).
bool HostAllowed(const std::string& host_header, const std::vector<std::string>& names);
// Cross-site request guard for state-changing routes: no Origin header (not a
// browser's cross-site request), or an Origin whose host:port is the request's
// Host (the server's own pages). "null" origins are refused.
bool SameOrigin(const http::Request& req);
// Security headers for the embedded pages (inline script and style, same-origin calls only).
// `connect_also`: origins the page's scripts may fetch besides its own (a cluster's other nodes,
// where a WHIP offer's 307 leads); anything but scheme://host[:port] is left out.
void PageHeaders(http::Response& res, const std::vector<std::string>& connect_also = {});

}  // namespace veil
