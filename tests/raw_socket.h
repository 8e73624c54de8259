// Test helper: plain TCP on loopback, byte by byte (HTTP framing and abuse tests).
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>

namespace veil::test {


inline int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

inline void Send(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;
    off += size_t(n);
  }
}

// Reads until the peer closes or `timeout_ms` passes; `closed` says which.
inline std::string ReadAll(int fd, int timeout_ms, bool* closed = nullptr) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  if (closed) *closed = false;
  for (;;) {
    const int left = int(std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count());
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, std::max(left, 0)) <= 0) return out;  // one look even when the time is up
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      if (closed) *closed = true;
      return out;
    }
    out.append(buf, size_t(n));
  }
}

// One whole response (head plus Content-Length body) or what came before the timeout.
inline std::string ReadResponse(int fd, int timeout_ms = 3000) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    const size_t head = out.find("\r\n\r\n");
    if (head != std::string::npos) {
      const size_t cl = out.find("Content-Length: ");
      const size_t len = cl == std::string::npos || cl > head ? 0 : std::stoul(out.substr(cl + 16));
      if (out.size() >= head + 4 + len) return out;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  return out;
}

}  // namespace veil::test
