// Test helper: runs the real `veil serve` binary on loopback (port chosen by
// the server), talks to its API, and stops it with a signal.
#pragma once
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "load/child_server.h"
#include "test_util.h"

namespace veil::test {

using json = nlohmann::json;

struct Reply {
  int status = 0;  // 0: no answer
  json body;
  std::string text;
  httplib::Headers headers;
};

class ServerProcess {
 public:
  // Starts `veil serve --listen 127.0.0.1:0 ARGS...` (stderr to a log file).
  // listen: the address to bind (another loopback address for a second node).
  // Admission by latency (server.admit_p99_ms) is off unless ARGS set it: these servers run
  // sessions on a loaded test machine whose p99 is not what their tests check, and a refusal by
  // it would fail them by the machine's speed. Its own test sets it.
  // The early re-timings of an idle node (server.retime_first_s) are off unless ARGS set a
  // re-timing key: two transcode timings of ~1-2 s of a core each, 5 s into every server that
  // idles (most of these), would take CPU from the tests running beside them. Their own tests
  // set them.
  explicit ServerProcess(const std::vector<std::string>& args, const std::string& listen = "127.0.0.1:0")
      : log_path_(TempPath("serve-" + std::to_string(++counter_) + ".log")) {
    std::vector<std::string> a = args;
    bool admit_set = false, retime_set = false;
    for (const std::string& s : a) {
      admit_set = admit_set || s.find("admit") != std::string::npos;
      retime_set = retime_set || s.find("retime") != std::string::npos;
    }
    if (!admit_set) a.insert(a.end(), {"--admit-p99-ms", "0"});
    if (!retime_set) a.insert(a.end(), {"--retime-first-s", "0"});
    auto c = ChildServer::Start(a, log_path_, VEIL_BIN, "serve", listen);
    if (!c.ok()) return;
    child_ = std::move(*c);
    client_ = std::make_unique<httplib::Client>(listen.substr(0, listen.rfind(':')), child_->port());
    client_->set_read_timeout(15, 0);
  }
  bool ok() const { return child_ && child_->port() > 0; }
  int port() const { return child_ ? child_->port() : 0; }
  std::string url() const { return child_ ? child_->url() : ""; }
  std::string log() const {
    std::string s;
    if (FILE* f = std::fopen(log_path_.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
      std::fclose(f);
    }
    return s;
  }
  bool alive() { return child_ && child_->alive(); }
  pid_t pid() const { return child_ ? child_->pid() : -1; }
  // Sends `sig` and waits (bounded) for the exit; returns the exit code (128+signal if killed).
  int Stop(int sig = SIGTERM, int timeout_ms = 15000) { return child_ ? child_->Stop(sig, timeout_ms) : -1; }

  Reply Call(const std::string& method, const std::string& path, const std::string& body = "",
             const httplib::Headers& headers = {}) {
    Reply r;
    if (!client_) return r;
    httplib::Result res(nullptr, httplib::Error::Unknown);
    if (method == "GET") res = client_->Get(path.c_str(), headers);
    else if (method == "POST") res = client_->Post(path.c_str(), headers, body, "application/json");
    else if (method == "PUT") res = client_->Put(path.c_str(), headers, body, "application/json");
    else if (method == "DELETE") res = client_->Delete(path.c_str(), headers);
    if (!res) return r;
    r.status = res->status;
    r.text = res->body;
    r.headers = res->headers;
    r.body = json::parse(res->body, nullptr, false);
    return r;
  }
  Reply CallJson(const std::string& method, const std::string& path, const json& body,
                 const httplib::Headers& headers = {}) {
    return Call(method, path, body.dump(), headers);
  }

 private:
  static inline int counter_ = 0;
  std::string log_path_;
  std::unique_ptr<ChildServer> child_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace veil::test
