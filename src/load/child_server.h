// Starts `veil serve` as a child process on a free loopback port (compare
// mode runs each configuration in its own server) and stops it with SIGTERM.
#pragma once
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace veil {

class ChildServer {
 public:
  // Runs `program COMMAND --listen LISTEN ARGS...` (program "": this
  // executable, i.e. veil itself; COMMAND serve or worker) and waits for its
  // "listening on URL" line; stderr goes to log_path.
  static Result<std::unique_ptr<ChildServer>> Start(const std::vector<std::string>& args, const std::string& log_path,
                                                    const std::string& program = "", const std::string& command = "serve",
                                                    const std::string& listen = "127.0.0.1:0");
  ~ChildServer();  // Stop()
  const std::string& url() const { return url_; }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool alive();
  // Sends `sig` and waits up to timeout_ms (then SIGKILL); the exit code
  // (128 + signal when killed by one).
  int Stop(int sig = 15 /* SIGTERM */, int timeout_ms = 20000);

 private:
  ChildServer() = default;
  pid_t pid_ = -1;
  std::string url_;
  int port_ = 0;
  int exit_code_ = -1;
};

}  // namespace veil
