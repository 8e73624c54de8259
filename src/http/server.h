// The HTTP/1.1 server of the control plane (veil serve's API, pages, WHIP/WHEP,
// and veil worker's metrics), built on Boost.Beast.
//
// Built to keep answering under pre-authentication abuse (docs/figures.md,
// "Control plane under abuse"):
// - one I/O thread multiplexes every connection, so an idle or slow client
//   costs a socket and a buffer, never a thread;
// - connections are capped; past the cap a new one is closed at once;
// - every phase has its own deadline: waiting for a request, its head, its
//   body, writing the answer; a client that misses one is disconnected;
// - head and body sizes are bounded, chunked bodies included (431, 413);
// - handlers run on a small pool; routes marked inline (/healthz, /readyz)
//   are answered on the I/O thread, so a pool busy with slow negotiations
//   does not delay them; requests waiting for the pool are bounded (503).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "core/metrics.h"
#include "core/status.h"
#include "http/router.h"

namespace veil::http {

struct Limits {
  int max_connections = 4096;       // open at once; the process's fd limit is raised to fit
  double idle_timeout_ms = 30000;   // for the first byte of a request (new or kept-alive connection)
  double header_timeout_ms = 10000; // from that byte to the end of the request head
  double body_timeout_ms = 10000;   // for the whole body
  double write_timeout_ms = 10000;  // for the whole answer
  size_t max_header_bytes = 16 * 1024;
  size_t max_body_bytes = 64 * 1024;
  int threads = 4;       // handler threads
  int max_queued = 256;  // requests waiting for a handler thread; more are answered 503
};

class Server {
 public:
  // Binds host:port (port 0: any free port) and serves `router` (which must
  // outlive the server). `metrics` (may be null) gets the veil_http_* series.
  static Result<std::unique_ptr<Server>> Start(const Router* router, const std::string& host, int port,
                                               const Limits& limits, MetricsRegistry* metrics);
  ~Server();  // Stop()
  int port() const;
  int open_connections() const;
  // Stops accepting, closes every connection, waits for running handlers.
  void Stop();

  struct Impl;  // opaque (keeps Boost out of this header)

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Raises the soft open-file limit towards `wanted` (at most the hard limit);
// returns the soft limit now in force.
long RaiseFileLimit(long wanted);

}  // namespace veil::http
