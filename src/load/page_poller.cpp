#include "load/page_poller.h"

#include <chrono>

#include "core/clock.h"
#include "core/metrics.h"
#include "core/thread_cpu.h"

namespace veil {

Result<std::unique_ptr<PagePoller>> PagePoller::Start(const std::string& server, const std::string& token,
                                                      std::set<std::string> sessions, double interval_ms) {
  if (!(interval_ms >= 10)) return Status::Error("the page poll interval must be at least 10 ms");
  auto api = ApiClient::Create(server, token);
  if (!api) return api.status();
  std::unique_ptr<PagePoller> p(new PagePoller());
  p->api_ = std::move(*api);
  p->sessions_ = std::move(sessions);
  p->interval_ms_ = interval_ms;
  p->thread_ = std::thread([raw = p.get()] {
    NameThisThread("page");
    raw->Run();
  });
  return p;
}

PagePoller::~PagePoller() { Stop(); }

void PagePoller::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void PagePoller::Run() {
  auto get = [&](const std::string& path) {
    ++requests_;
    auto r = api_->CallText("GET", path);
    if (!r) ++failures_;
    return r;
  };
  double next = NowMs();
  while (!stop_) {
    get("/v1/sessions");
    for (const std::string& id : sessions_) {
      if (stop_) break;
      const std::string base = "/v1/sessions/" + id;
      get(base + "/stats");
      get(base + "/history");
      const double t0 = NowMs();
      if (auto jpg = get(base + "/snapshot.jpg")) {
        ++snapshots_;
        snapshot_bytes_ += jpg->size();
        AtomicAdd(snapshot_ms_, NowMs() - t0);
      }
    }
    get("/v1/targets");
    get("/v1/events");
    ++rounds_;
    next += interval_ms_;
    while (!stop_ && NowMs() < next) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (NowMs() > next + interval_ms_) next = NowMs();  // a slow round: no burst to catch up
  }
}

PagePollCounts PagePoller::counts() const {
  return {rounds_, requests_, failures_, snapshots_, snapshot_bytes_, snapshot_ms_.load()};
}

}  // namespace veil
