#include "transport/rtp/udp_relay.h"

#include <vector>

#include "core/clock.h"
#include "core/thread_cpu.h"

namespace veil {

Result<std::unique_ptr<UdpRelay>> UdpRelay::Start(const std::string& address, int port) {
  auto in = UdpSocket::Bind(address, port, 1 << 20);
  if (!in) return in.status();
  auto out = UdpSocket::Bind("0.0.0.0", 0, 0, 1 << 20);
  if (!out) return out.status();
  std::unique_ptr<UdpRelay> r(new UdpRelay());
  r->in_ = std::move(*in);
  r->out_ = std::move(*out);
  r->port_ = r->in_.port();
  r->thread_ = std::thread([p = r.get()] {
    NameThisThread("relay");
    p->Run();
  });
  return r;
}

UdpRelay::~UdpRelay() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

Status UdpRelay::AddDestination(const std::string& host, int port) {
  sockaddr_in a{};
  if (Status s = ParseEndpoint(host, port, &a); !s) return s;
  std::lock_guard lk(mu_);
  const std::string key = host + ":" + std::to_string(port);
  if (!dests_.emplace(key, a).second) return Status::Error("destination " + key + " already exists");
  return Status::Ok();
}

bool UdpRelay::RemoveDestination(const std::string& host, int port) {
  std::lock_guard lk(mu_);
  return dests_.erase(host + ":" + std::to_string(port)) > 0;
}

void UdpRelay::Run() {
  std::vector<uint8_t> buf(2048);
  while (!stop_) {
    const long n = in_.Receive(buf.data(), buf.size(), 100);
    if (n > 0) Forward(buf.data(), size_t(n));
  }
}

void UdpRelay::Forward(const uint8_t* data, size_t n) {
  ++in_count_;
  bytes_ += uint64_t(n);
  if (n < 12 || n > 1500 || (data[0] >> 6) != 2) {
    ++invalid_;
    return;
  }
  last_ms_ = NowMs();
  std::lock_guard lk(mu_);
  for (const auto& [k, a] : dests_)
    if (out_.SendTo(a, data, n)) ++fwd_;
  for (const auto& [k, tap] : taps_) {
    tap(data, n);
    ++fwd_;
  }
}

Status UdpRelay::AddTap(const std::string& key, Tap tap) {
  std::lock_guard lk(mu_);
  if (!taps_.emplace(key, std::move(tap)).second) return Status::Error("audio tap " + key + " already exists");
  return Status::Ok();
}

bool UdpRelay::RemoveTap(const std::string& key) {
  std::lock_guard lk(mu_);
  return taps_.erase(key) > 0;
}

UdpRelayStats UdpRelay::stats() const {
  UdpRelayStats s;
  s.packets_in = in_count_;
  s.packets_forwarded = fwd_;
  s.invalid = invalid_;
  s.bytes_in = bytes_;
  s.last_packet_ms = last_ms_;
  return s;
}

}  // namespace veil
