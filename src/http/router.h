// Routes requests to handlers by method and whole-path regex, in the order
// added. A guard runs first (host, origin and token checks; it may add to the
// request's params for the handler); an after-hook runs last, whoever answered;
// handler exceptions become 500s; an unknown path is 404 and a known path with another
// method 405 with Allow. HEAD is served by the GET route without a body.
#pragma once
#include <regex>
#include <string>
#include <vector>

#include "http/message.h"

namespace veil::http {

class Router {
 public:
  // Returns true when it answered the request itself (the handler is skipped).
  using Guard = std::function<bool(Request&, Response&)>;
  // Sees every request once it is answered (by the guard, a handler or an error).
  using After = std::function<void(const Request&, const Response&)>;
  // Turns a status without a body into the API's error body; `detail` is a
  // handler exception's message (status 500), else empty.
  using ErrorBody = std::function<void(const Request&, Response&, const std::string& detail)>;

  // `inline_ok`: cheap and never blocking (health, readiness): the server may
  // answer it on its I/O thread, ahead of queued handlers.
  void Add(const std::string& method, const std::string& pattern, Handler h, bool inline_ok = false);
  void Get(const std::string& p, Handler h, bool inline_ok = false) { Add("GET", p, std::move(h), inline_ok); }
  void Post(const std::string& p, Handler h) { Add("POST", p, std::move(h)); }
  void Put(const std::string& p, Handler h) { Add("PUT", p, std::move(h)); }
  void Delete(const std::string& p, Handler h) { Add("DELETE", p, std::move(h)); }
  void Patch(const std::string& p, Handler h) { Add("PATCH", p, std::move(h)); }
  void Options(const std::string& p, Handler h) { Add("OPTIONS", p, std::move(h)); }
  void SetGuard(Guard g) { guard_ = std::move(g); }
  void SetErrorBody(ErrorBody e) { error_body_ = std::move(e); }
  void SetAfter(After a) { after_ = std::move(a); }

  // Whether the route for this request may run on the I/O thread.
  bool IsInline(const Request& req) const;
  // Answers `req` into `res`; never throws.
  void Handle(Request& req, Response& res) const;

 private:
  struct Route {
    std::string method;
    std::regex re;
    Handler handler;
    bool inline_ok;
  };
  void Answered(Request& req, Response& res) const;  // guard, handler, error body
  const Route* Match(const std::string& method, const std::string& path, std::smatch* m, std::string* allow) const;
  std::vector<Route> routes_;
  Guard guard_;
  ErrorBody error_body_;
  After after_;
};

}  // namespace veil::http
