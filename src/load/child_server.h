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
  // `veil` is this program; args follow "serve --listen 127.0.0.1:0"; stderr goes to log_path.
  static Result<std::unique_ptr<ChildServer>> Start(const std::vector<std::string>& args, const std::string& log_path);
  ~ChildServer();  // Stop()
  const std::string& url() const { return url_; }
  int Stop();  // SIGTERM, waits up to 20 s (then SIGKILL); the exit code

 private:
  ChildServer() = default;
  pid_t pid_ = -1;
  std::string url_;
  int exit_code_ = -1;
};

}  // namespace veil
