#include "server/http_util.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace veil {

void Reply(http::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.SetContent(body.dump(2) + "\n", "application/json");
}

void Error(http::Response& res, int status, const std::string& why) { Reply(res, status, {{"error", why}}); }

int HttpStatusOf(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kForbidden: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kConflict: return 409;
    case StatusCode::kUnsupported: return 422;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kUnknown:
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

void Error(http::Response& res, const Status& s, int retry_after_s) {
  if (s.code() == StatusCode::kUnavailable) res.SetHeader("Retry-After", std::to_string(retry_after_s));
  Reply(res, HttpStatusOf(s.code()), {{"error", s.message()}, {"code", StatusCodeName(s.code())}});
}

std::string Caller(const http::Request& req) {
  std::string c = req.remote_addr + ":" + std::to_string(req.remote_port);
  const std::string name = req.Header("X-Veil-Caller");
  if (!name.empty()) {
    std::string clean;
    for (char ch : name.substr(0, 64))
      clean += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.' || ch == '@') ? ch : '_';
    c = clean + "@" + c;
  }
  return c;
}

bool TimingSafeEqual(const std::string& a, const std::string& b) {
  unsigned diff = unsigned(a.size() ^ b.size());
  for (size_t i = 0; i < a.size(); ++i) diff |= unsigned(uint8_t(a[i]) ^ uint8_t(i < b.size() ? b[i] : 0));
  return diff == 0;
}

bool BearerOk(const http::Request& req, const std::string& token) {
  if (token.empty()) return true;
  const std::string auth = req.Header("Authorization");
  return auth.rfind("Bearer ", 0) == 0 && TimingSafeEqual(auth.substr(7), token);
}

std::string HostName(const std::string& host_header) {
  std::string h = host_header;
  if (!h.empty() && h[0] == '[') {
    const size_t end = h.find(']');
    h = end == std::string::npos ? h.substr(1) : h.substr(1, end - 1);
  } else if (const size_t colon = h.rfind(':'); colon != std::string::npos) {
    h = h.substr(0, colon);
  }
  std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return h;
}

bool HostAllowed(const std::string& host_header, const std::vector<std::string>& names) {
  if (host_header.empty()) return true;
  const std::string h = HostName(host_header);
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1 || inet_pton(AF_INET6, h.c_str(), &v6) == 1) return true;
  if (h == "localhost" || h.ends_with(".localhost")) return true;  // loopback by definition (RFC 6761)
  return std::find(names.begin(), names.end(), h) != names.end();
}

bool SameOrigin(const http::Request& req) {
  if (!req.HasHeader("Origin")) return true;
  const std::string origin = req.Header("Origin");
  const size_t scheme = origin.find("://");
  if (scheme == std::string::npos) return false;  // "null" and anything malformed
  std::string authority = origin.substr(scheme + 3);
  if (authority.find('/') != std::string::npos) return false;
  std::string host = req.Header("Host");
  std::transform(authority.begin(), authority.end(), authority.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (authority == host) return true;
  // A default port may be left out on one side only.
  const std::string dflt = origin.rfind("https://", 0) == 0 ? ":443" : ":80";
  return authority + dflt == host || authority == host + dflt;
}

void PageHeaders(http::Response& res, const std::vector<std::string>& connect_also) {
  std::string connect = "'self'";
  for (const std::string& o : connect_also) {
    const bool scheme = o.rfind("http://", 0) == 0 || o.rfind("https://", 0) == 0;
    const size_t rest = o.find("://") + 3;
    bool ok = scheme && o.size() > rest && o.size() < 256;
    for (size_t i = rest; ok && i < o.size(); ++i) ok = std::isalnum(static_cast<unsigned char>(o[i])) || std::strchr(".-:[]", o[i]);
    if (ok) connect += " " + o;
  }
  res.SetHeader("Content-Security-Policy",
                 "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; connect-src " + connect + "; "
                 "img-src 'self' data: blob:; media-src 'self' blob:; base-uri 'none'; form-action 'none'; "
                 "frame-ancestors 'none'");
  res.SetHeader("X-Content-Type-Options", "nosniff");
  res.SetHeader("Cache-Control", "no-store");
}

}  // namespace veil
