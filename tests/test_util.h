// Helpers shared by the tests: asset paths and running the veil binary.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "media/media_types.h"

namespace veil::test {

inline std::string Assets() {
  const char* e = std::getenv("VEIL_ASSETS");
  return e && *e ? e : VEIL_TEST_ASSETS;
}
inline std::string Media(const std::string& name) { return std::string(VEIL_TEST_MEDIA) + "/" + name; }
inline std::string Models() { return Assets() + "/models"; }

struct RunResult {
  int rc = -1;
  std::string out;  // stdout + stderr
};

// Runs a shell command line, capturing stdout + stderr and the exit code.
inline RunResult RunShell(const std::string& cmd) {
  RunResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// Runs `[ENV=...] veil ARGS` (through the shell), capturing output and exit code.
inline RunResult RunVeil(const std::string& args, const std::string& env_prefix = "") {
  return RunShell(env_prefix + std::string(VEIL_BIN) + " " + args);
}

// `promtool check metrics` (Debian prometheus) on Prometheus text: rc 0 and no output when
// every name follows the conventions (base units, _total on counters, ...).
inline RunResult PromtoolCheck(const std::string& text) {
  char path[] = "/tmp/veil-metrics-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return {-1, "cannot create a temporary file"};
  const bool written = write(fd, text.data(), text.size()) == ssize_t(text.size());
  close(fd);
  RunResult r = written ? RunShell(std::string("promtool check metrics < ") + path) : RunResult{-1, "write failed"};
  unlink(path);
  return r;
}

// A small 30 fps stream description for parameter-validation tests.
inline VideoInfo SmallVideo(int w = 64, int h = 48) {
  VideoInfo vi;
  vi.width = w;
  vi.height = h;
  vi.tb_den = 30;
  vi.fps = 30;
  return vi;
}

inline std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/veil-" + std::to_string(getpid()) + "-" + name;
}

}  // namespace veil::test
