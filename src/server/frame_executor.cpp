#include "server/frame_executor.h"

#include <algorithm>
#include <string>

#include "core/thread_cpu.h"

namespace veil {

Result<std::shared_ptr<FrameExecutor>> FrameExecutor::Start(int threads) {
  if (threads < 1 || threads > 1024)
    return Status::Error("the frame executor needs 1..1024 threads, got " + std::to_string(threads));
  std::shared_ptr<FrameExecutor> e(new FrameExecutor(threads));
  e->threads_.reserve(size_t(threads));
  for (int i = 0; i < threads; ++i) e->threads_.emplace_back([p = e.get()] {
    NameThisThread("frame");
    p->Loop();
  });
  return e;
}

FrameExecutor::~FrameExecutor() {
  {
    MutexLock lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void FrameExecutor::Queue(Client* c, double deadline_ms) {
  State& st = clients_[c];
  if (st.removing) return;
  if (st.running) {  // queued again when it returns
    st.again_deadline = st.again ? std::min(st.again_deadline, deadline_ms) : deadline_ms;
    st.again = true;
    return;
  }
  if (st.queued) {
    if (deadline_ms >= st.deadline) return;
    ready_.erase({st.deadline, c});
  }
  st.queued = true;
  st.deadline = deadline_ms;
  ready_.emplace(deadline_ms, c);
  work_cv_.notify_one();
}

void FrameExecutor::Ready(Client* c, double deadline_ms) {
  MutexLock lk(mu_);
  Queue(c, deadline_ms);
}

void FrameExecutor::Remove(Client* c) {
  MutexLock lk(mu_);
  auto it = clients_.find(c);
  if (it == clients_.end()) return;
  it->second.removing = true;
  if (it->second.queued) ready_.erase({it->second.deadline, c});
  it->second.queued = false;
  lk.Wait(idle_cv_, [&]() REQUIRES(mu_) { return !clients_[c].running; });
  clients_.erase(c);
}

FrameExecutor::Stats FrameExecutor::stats() const {
  MutexLock lk(mu_);
  Stats s;
  s.threads = nthreads_;
  s.runs = runs_;
  s.clients = clients_.size();
  s.ready = ready_.size();
  return s;
}

void FrameExecutor::Loop() {
  MutexLock lk(mu_);
  for (;;) {
    lk.Wait(work_cv_, [&]() REQUIRES(mu_) { return stop_ || !ready_.empty(); });
    if (stop_) return;
    Client* const c = ready_.begin()->second;
    ready_.erase(ready_.begin());
    State& st = clients_[c];
    st.queued = false;
    st.running = true;
    ++runs_;
    lk.Unlock();
    std::optional<double> next = c->RunOne();
    lk.Relock();
    State& after = clients_[c];  // the same entry: Remove erases it only once it is not running
    after.running = false;
    if (after.removing) {
      idle_cv_.notify_all();
      continue;
    }
    if (after.again) {
      next = next ? std::min(*next, after.again_deadline) : after.again_deadline;
      after.again = false;
    }
    if (next) Queue(c, *next);
  }
}

}  // namespace veil
