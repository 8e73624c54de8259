// Minimal POSIX UDP sockets for the parts of RTP transport that need no
// parsing: per-viewer egress and the audio relay. Numeric addresses only.
#pragma once
#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace veil {

// Parses a numeric IPv4 address and port into `out`.
Status ParseEndpoint(const std::string& host, int port, sockaddr_in* out);
bool IsLoopback(const std::string& host);

class UdpSocket {
 public:
  UdpSocket() = default;
  UdpSocket(UdpSocket&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  UdpSocket& operator=(UdpSocket&& o) noexcept;
  ~UdpSocket();
  // Bound to address:port (0 = any free port); buffer sizes are requests.
  static Result<UdpSocket> Bind(const std::string& address, int port, int rcvbuf = 0, int sndbuf = 0);
  int fd() const { return fd_; }
  int port() const;
  // Waits up to timeout_ms for a datagram; returns its size, 0 on timeout, -1 on error.
  long Receive(uint8_t* buf, size_t cap, int timeout_ms);
  // dont_wait: never block (MSG_DONTWAIT): a full send buffer fails the send instead.
  bool SendTo(const sockaddr_in& to, const uint8_t* data, size_t n, bool dont_wait = false);

 private:
  int fd_ = -1;
};

}  // namespace veil
