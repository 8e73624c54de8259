// The server's frame executor (issue 12, docs/capacity.md): one pool of threads, sized to the
// cores, runs the ready frames of every session, earliest deadline first, instead of one worker
// thread per session that the OS time-slices against the others. A session is a serial executor
// on it: at most one pool thread runs a session's work at a time, so its privacy state and its
// encoder are never used by two threads at once, and its frames stay in order.
//
// A client says a frame is ready (Ready, with the time by which it has to leave); a pool thread
// takes the client whose waiting frame is due first and calls RunOne, which does one frame's work
// and says when its next waiting frame, if any, is due. A Ready that comes while the client runs
// is kept and the client queued again when it returns.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"

namespace veil {

class FrameExecutor {
 public:
  class Client {
   public:
    virtual ~Client() = default;
    // One frame's work, on a pool thread (never two at once for one client). Returns the
    // deadline (ms, NowMs clock) of the next frame waiting, or nullopt when none waits.
    virtual std::optional<double> RunOne() = 0;
  };

  struct Stats {
    int threads = 0;
    uint64_t runs = 0;       // RunOne calls
    size_t clients = 0;      // known (queued, running or idle)
    size_t ready = 0;        // queued now
  };

  // threads: 1..1024.
  static Result<std::shared_ptr<FrameExecutor>> Start(int threads);
  ~FrameExecutor();  // stops and joins the pool; clients should be removed first
  FrameExecutor(const FrameExecutor&) = delete;
  FrameExecutor& operator=(const FrameExecutor&) = delete;

  // A frame of c's, due by deadline_ms, is waiting.
  void Ready(Client* c, double deadline_ms) EXCLUDES(mu_);
  // c's work in flight (if any) ends before this returns, and c is never run again.
  void Remove(Client* c) EXCLUDES(mu_);
  Stats stats() const EXCLUDES(mu_);

 private:
  explicit FrameExecutor(int threads) : nthreads_(threads) {}
  void Loop() EXCLUDES(mu_);
  void Queue(Client* c, double deadline_ms) REQUIRES(mu_);

  struct State {
    bool queued = false, running = false, removing = false;
    double deadline = 0;     // while queued: its key in ready_
    bool again = false;      // a Ready came while it ran
    double again_deadline = 0;
  };

  const int nthreads_;
  mutable Mutex mu_;
  std::condition_variable work_cv_, idle_cv_;
  std::map<Client*, State> clients_ GUARDED_BY(mu_);
  std::set<std::pair<double, Client*>> ready_ GUARDED_BY(mu_);  // earliest deadline first
  uint64_t runs_ GUARDED_BY(mu_) = 0;
  bool stop_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace veil
