#include "transport/net/udp.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace veil {

Status ParseEndpoint(const std::string& host, int port, sockaddr_in* out) {
  if (port <= 0 || port > 65535) return Status::Error("port must be in [1, 65535], got " + std::to_string(port));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
    return Status::Error("host must be a numeric IPv4 address, got '" + host + "'");
  const uint32_t ip = ntohl(a.sin_addr.s_addr);
  if (ip == 0 || ip == 0xffffffffu || (ip >> 28) == 0xe)
    return Status::Error("host must be a unicast address, got '" + host + "'");
  *out = a;
  return Status::Ok();
}

bool IsLoopback(const std::string& host) {
  in_addr a{};
  return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

UdpSocket& UdpSocket::operator=(UdpSocket&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

UdpSocket::~UdpSocket() {
  if (fd_ >= 0) close(fd_);
}

Result<UdpSocket> UdpSocket::Bind(const std::string& address, int port, int rcvbuf, int sndbuf) {
  if (port < 0 || port > 65535) return Status::Error("port must be in [0, 65535]");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
    return Status::Error("bind address must be a numeric IPv4 address, got '" + address + "'");
  UdpSocket s;
  s.fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s.fd_ < 0) return Status::Error(std::string("socket: ") + strerror(errno));
  if (rcvbuf > 0) setsockopt(s.fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  if (sndbuf > 0) setsockopt(s.fd_, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  if (bind(s.fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return Status::Error("cannot bind UDP " + address + ":" + std::to_string(port) + ": " + strerror(errno));
  return s;
}

int UdpSocket::port() const {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (fd_ < 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) return -1;
  return ntohs(a.sin_port);
}

long UdpSocket::Receive(uint8_t* buf, size_t cap, int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  const int r = poll(&p, 1, timeout_ms);
  if (r == 0) return 0;
  if (r < 0) return errno == EINTR ? 0 : -1;
  const ssize_t n = recv(fd_, buf, cap, MSG_DONTWAIT);
  if (n < 0) return (errno == EAGAIN || errno == EINTR) ? 0 : -1;
  return long(n);
}

bool UdpSocket::SendTo(const sockaddr_in& to, const uint8_t* data, size_t n, bool dont_wait) {
  for (;;) {
    const ssize_t r = sendto(fd_, data, n, dont_wait ? MSG_DONTWAIT : 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
    if (r >= 0) return size_t(r) == n;
    if (errno != EINTR) return false;
  }
}

}  // namespace veil
