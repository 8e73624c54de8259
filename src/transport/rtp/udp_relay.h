// RTP pass-through relay (Opus audio): datagrams from the publisher (its UDP
// port, or Forward() for a WebRTC publisher) are forwarded byte-for-byte to
// every destination and tap (a WebRTC viewer). Only well-formed RTP (version
// 2, 12..1500 bytes) is forwarded; anything else is counted and dropped.
#pragma once
#include <netinet/in.h>

#include <atomic>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "transport/net/udp.h"

namespace veil {

struct UdpRelayStats {
  uint64_t packets_in = 0, packets_forwarded = 0, invalid = 0, bytes_in = 0;
  double last_packet_ms = -1;  // NowMs() of the last valid packet, -1 when none
};

class UdpRelay {
 public:
  static Result<std::unique_ptr<UdpRelay>> Start(const std::string& address, int port = 0);
  ~UdpRelay();
  int port() const { return port_; }
  Status AddDestination(const std::string& host, int port);
  bool RemoveDestination(const std::string& host, int port);
  // A packet that arrived another way (a WebRTC publisher's audio): checked and forwarded like a datagram.
  void Forward(const uint8_t* data, size_t size);
  // Called with every forwarded packet (under the relay's lock: keep it short).
  using Tap = std::function<void(const uint8_t* data, size_t size)>;
  Status AddTap(const std::string& key, Tap tap);
  bool RemoveTap(const std::string& key);
  UdpRelayStats stats() const;

 private:
  UdpRelay() = default;
  void Run();
  UdpSocket in_, out_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::map<std::string, sockaddr_in> dests_;  // guarded by mu_
  std::map<std::string, Tap> taps_;           // guarded by mu_
  std::atomic<uint64_t> in_count_{0}, fwd_{0}, invalid_{0}, bytes_{0};
  std::atomic<double> last_ms_{-1};
};

}  // namespace veil
