#include "load/child_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/clock.h"

namespace veil {

Result<std::unique_ptr<ChildServer>> ChildServer::Start(const std::vector<std::string>& args, const std::string& log_path,
                                                        const std::string& program, const std::string& command,
                                                        const std::string& listen) {
  char self[4096];
  if (program.empty()) {
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return Status::Error("cannot find this program's path");
    self[n] = 0;
  } else {
    if (program.size() >= sizeof self) return Status::Error("program path too long");
    std::snprintf(self, sizeof self, "%s", program.c_str());
  }
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return Status::Error("pipe failed");
  std::vector<std::string> all = {self, command, "--listen", listen};
  all.insert(all.end(), args.begin(), args.end());
  const pid_t pid = fork();
  if (pid < 0) return Status::Error("fork failed");
  if (pid == 0) {
    dup2(out[1], 1);
    const int err = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) dup2(err, 2);
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(self, argv.data());
    _exit(127);
  }
  close(out[1]);
  std::unique_ptr<ChildServer> c(new ChildServer());
  c->pid_ = pid;
  std::string line;
  const double deadline = NowMs() + 30000;
  while (NowMs() < deadline) {
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) {
      if (waitpid(pid, nullptr, WNOHANG) == pid) {
        c->pid_ = -1;
        break;
      }
      continue;
    }
    char ch;
    if (read(out[0], &ch, 1) != 1 || ch == '\n') break;
    line += ch;
  }
  close(out[0]);
  const std::string tag = "listening on ";
  const auto at = line.find(tag);
  if (at == std::string::npos)
    return Status::Error(command + " did not start (see " + log_path + ")");
  c->url_ = line.substr(at + tag.size());
  c->url_ = c->url_.substr(0, c->url_.find(' '));  // "grpc://127.0.0.1:8001 (models ...)" -> the URL
  c->port_ = std::atoi(c->url_.substr(c->url_.rfind(':') + 1).c_str());
  return c;
}

bool ChildServer::alive() {
  int st = 0;
  if (pid_ <= 0) return false;
  if (waitpid(pid_, &st, WNOHANG) != pid_) return true;
  pid_ = -1;
  exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return false;
}

int ChildServer::Stop(int sig, int timeout_ms) {
  if (pid_ <= 0) return exit_code_;
  kill(pid_, sig);
  int st = 0;
  for (int waited = 0; waited < timeout_ms; waited += 50) {
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      pid_ = -1;
      exit_code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return exit_code_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, &st, 0);
  pid_ = -1;
  exit_code_ = 137;
  return exit_code_;
}

ChildServer::~ChildServer() { Stop(); }

}  // namespace veil
