#include "server/http_util.h"

#include <httplib.h>

#include <cctype>

namespace veil {

void Reply(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(body.dump(2) + "\n", "application/json");
}

void Error(httplib::Response& res, int status, const std::string& why) { Reply(res, status, {{"error", why}}); }

std::string Caller(const httplib::Request& req) {
  std::string c = req.remote_addr + ":" + std::to_string(req.remote_port);
  const std::string name = req.get_header_value("X-Veil-Caller");
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

bool BearerOk(const httplib::Request& req, const std::string& token) {
  if (token.empty()) return true;
  const std::string auth = req.get_header_value("Authorization");
  return auth.rfind("Bearer ", 0) == 0 && TimingSafeEqual(auth.substr(7), token);
}

void PageHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
                 "img-src 'self' data: blob:; media-src 'self' blob:; base-uri 'none'; form-action 'none'; "
                 "frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-store");
}

}  // namespace veil
