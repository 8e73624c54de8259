// Test helper: runs the real `veil serve` binary on loopback (port chosen by
// the server), talks to its API, and stops it with a signal.
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

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
  // Starts `veil serve --listen 127.0.0.1:0 ARGS...`; waits for its "listening" line.
  explicit ServerProcess(const std::vector<std::string>& args) {
    int out[2];
    if (pipe(out) != 0) return;
    const std::string log = TempPath("serve-" + std::to_string(++counter_) + ".log");
    log_path_ = log;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      const int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err >= 0) dup2(err, 2);
      close(out[0]);
      std::vector<std::string> all = {VEIL_BIN, "serve", "--listen", "127.0.0.1:0"};
      all.insert(all.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : all) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(VEIL_BIN, argv.data());
      _exit(127);
    }
    close(out[1]);
    out_ = out[0];
    // "veil serve: listening on http://127.0.0.1:PORT"
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_, POLLIN, 0};
      if (poll(&p, 1, 200) <= 0) continue;
      char c;
      if (read(out_, &c, 1) != 1) break;
      if (c == '\n') break;
      line += c;
    }
    const auto at = line.rfind(':');
    if (line.find("listening on") != std::string::npos && at != std::string::npos) {
      port_ = std::stoi(line.substr(at + 1));
      client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
      client_->set_read_timeout(15, 0);
    }
  }
  ~ServerProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_ >= 0) close(out_);
  }
  bool ok() const { return port_ > 0; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
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
  bool alive() { return pid_ > 0 && !reaped_ && waitpid(pid_, &status_, WNOHANG) == 0; }

  // Sends `sig` and waits (bounded) for the exit; returns the exit code (128+signal if killed, -1 on timeout).
  int Stop(int sig = SIGTERM, int timeout_ms = 15000) {
    if (pid_ <= 0 || reaped_) return -1;
    kill(pid_, sig);
    for (int waited = 0; waited < timeout_ms; waited += 50) {
      if (waitpid(pid_, &status_, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }

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
  Reply CallJson(const std::string& method, const std::string& path, const json& body) {
    return Call(method, path, body.dump());
  }

 private:
  static inline int counter_ = 0;
  pid_t pid_ = -1;
  int out_ = -1, port_ = 0, status_ = 0;
  bool reaped_ = false;
  std::string log_path_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace veil::test
