// What an open operator page asks of the server, for veil load: every
// interval, the session list, then per session its stats, its history and
// its snapshot.jpg, then the AI targets and the events (web/operator.html's
// requests, without a browser's own CPU on the machine under test). Runs on
// its own thread with its own connection; counts what it got.
#pragma once
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "client/api_client.h"

namespace veil {

struct PagePollCounts {
  uint64_t rounds = 0, requests = 0, failures = 0, snapshots = 0, snapshot_bytes = 0;
  double snapshot_ms_sum = 0;  // request time of the snapshots
};

class PagePoller {
 public:
  // interval_ms > 0; sessions: the ids to poll (those the tool created).
  static Result<std::unique_ptr<PagePoller>> Start(const std::string& server, const std::string& token,
                                                   std::set<std::string> sessions, double interval_ms);
  ~PagePoller();  // Stop()
  void Stop();
  PagePollCounts counts() const;

 private:
  PagePoller() = default;
  void Run();
  std::unique_ptr<ApiClient> api_;
  std::set<std::string> sessions_;
  double interval_ms_ = 1000;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::atomic<uint64_t> rounds_{0}, requests_{0}, failures_{0}, snapshots_{0}, snapshot_bytes_{0};
  std::atomic<double> snapshot_ms_{0};
};

}  // namespace veil
