#include "http/router.h"

#include <spdlog/spdlog.h>

namespace veil::http {

void Router::Add(const std::string& method, const std::string& pattern, Handler h, bool inline_ok) {
  routes_.push_back({method, std::regex(pattern), std::move(h), inline_ok});
}

const Router::Route* Router::Match(const std::string& method, const std::string& path, std::smatch* m,
                                   std::string* allow) const {
  const std::string& want = method == "HEAD" ? std::string("GET") : method;
  const Route* found = nullptr;
  for (const Route& r : routes_) {
    std::smatch sm;
    if (!std::regex_match(path, sm, r.re)) continue;
    if (allow) {
      if (allow->find(r.method) == std::string::npos) *allow += (allow->empty() ? "" : ", ") + r.method;
    }
    if (!found && r.method == want) {
      found = &r;
      if (m) *m = sm;
      if (!allow) break;
    }
  }
  return found;
}

bool Router::IsInline(const Request& req) const {
  // On the I/O thread for every request: only the (few) inline routes are tried.
  const std::string& want = req.method == "HEAD" ? std::string("GET") : req.method;
  for (const Route& r : routes_)
    if (r.inline_ok && r.method == want && std::regex_match(req.path, r.re)) {
      // The first route that matches this method and path must be the inline one.
      return Match(req.method, req.path, nullptr, nullptr) == &r;
    }
  return false;
}

void Router::Handle(Request& req, Response& res) const {
  Answered(req, res);
  if (!after_) return;
  try {
    after_(req, res);
  } catch (const std::exception& e) {
    spdlog::error("HTTP after-hook {} {}: {}", req.method, req.path, e.what());
  } catch (...) {
  }
}

void Router::Answered(Request& req, Response& res) const {
  std::string detail;
  try {
    if (guard_ && guard_(req, res)) {
      if (error_body_ && res.body.empty() && res.status >= 400) error_body_(req, res, detail);
      return;
    }
    std::smatch m;
    std::string allow;
    const Route* r = Match(req.method, req.path, &m, &allow);
    if (!r) {
      res.status = allow.empty() ? 404 : 405;
      if (!allow.empty()) res.SetHeader("Allow", allow);
    } else {
      req.matches.assign(m.begin(), m.end());
      r->handler(req, res);
    }
  } catch (const std::exception& e) {
    detail = e.what();
    res = Response();
    res.status = 500;
  } catch (...) {
    detail = "unknown exception";
    res = Response();
    res.status = 500;
  }
  if (!detail.empty()) spdlog::error("HTTP handler {} {}: {}", req.method, req.path, detail);
  if (error_body_ && res.body.empty() && res.status >= 400) {
    try {
      error_body_(req, res, detail);
    } catch (...) {
    }
  }
}

}  // namespace veil::http
