// One inference scheduler per AI target: detection requests from every
// session land in one bounded queue and run as batches on the target's
// inference threads (each owns its own detector: OpenCV DNN nets are not
// thread-safe). A session has at most one pending request: a newer frame
// supersedes an older one that has not started (latest-frame-wins), and a
// request whose deadline passes before inference starts is dropped. Every
// request gets exactly one callback, whatever happens to it.
// A hosted scheduler (CreateHosted) has no threads: its host (the server's frame
// executor, server/inference_on_executor.h) runs its batches, in the host's order.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <opencv2/core.hpp>
#include <thread>
#include <vector>

#include "core/metrics.h"
#include "core/mutex.h"
#include "core/status.h"
#include "vision/detector.h"

namespace veil {

enum class DetectOutcome { kOk, kFailed, kStale, kSuperseded, kShutdown };
const char* OutcomeName(DetectOutcome o);

struct DetectResult {
  uint64_t session = 0;
  int64_t frame_index = 0;
  DetectOutcome outcome = DetectOutcome::kOk;
  std::string error;
  Detections detections;         // in the request image's pixels
  std::vector<cv::Mat> outputs;  // raw requests: the network's outputs for this image
  double queue_ms = 0;           // submit -> inference start
  double infer_ms = 0;           // the whole batch's forward + decode
  int batch_size = 0;
};

struct DetectRequest {
  uint64_t session = 0;
  int64_t frame_index = 0;
  cv::Mat image;  // small BGR copy (CV_8UC3; raw requests also CV_32FC3); owned by the request
  float score_threshold = 0.3f;
  bool raw = false;  // answer with the network's outputs, not decoded detections (remote workers)
  double deadline_ms = 0;  // NowMs() clock; 0 = none. Not started by then -> kStale
  // A host (server/inference_on_executor.h) orders the request as if it had been submitted this
  // much later, ms: a detection that may come back late (the tracker carries the masks) lets
  // the frames due sooner go first. Requests also leave the queue in that order. 0: none.
  double slack_ms = 0;
  std::function<void(DetectResult&&)> done;
};

struct SchedulerConfig {
  int max_batch = 1;      // frames per forward pass (CPU: 1 pays best, see docs/figures.md)
  int max_wait_us = 0;    // how long a partial batch may wait for more frames
  int threads = 1;        // inference threads (one detector each)
  size_t max_queue = 64;  // pending requests across sessions; the oldest is dropped beyond it
  // The inference threads' nice value (Linux: per thread), 0..19. A detection has slack (a result
  // may come back up to the privacy bound late) and a frame's encode has not: above 0, the
  // frames' threads go first when the cores are short.
  int nice = 0;
};
Status Validate(const SchedulerConfig& c);

using DetectorFactory = std::function<Result<std::unique_ptr<Detector>>()>;

class InferenceScheduler;

// Where a hosted scheduler's inference runs: on threads the host owns (the server's frame
// executor, server.detect_on_executor), in its order, instead of on threads of the scheduler's.
// The host calls RunPending on one thread at a time.
class InferenceHost {
 public:
  virtual ~InferenceHost() = default;
  // `s` has requests waiting, the first of them in order as if submitted at submitted_ms (its
  // submission plus its slack_ms; NowMs clock): call s->RunPending() soon. Called with the
  // scheduler's lock held (so never after its Forget): must not call into the scheduler.
  virtual void Wake(InferenceScheduler* s, double submitted_ms) = 0;
  // `s` is going away: RunPending is not running when this returns, and is never called again.
  virtual void Forget(InferenceScheduler* s) = 0;
};

// Where a session's detection requests go: one scheduler, or a router over
// several AI targets. Submit never blocks on inference and every request gets
// exactly one callback.
class DetectionSink {
 public:
  virtual ~DetectionSink() = default;
  virtual void Submit(DetectRequest r) = 0;
};

class InferenceScheduler : public DetectionSink {
 public:
  // Creates `threads` detectors with `factory`; fails if any cannot be made.
  // `metrics` (may be null: private registry) must outlive the scheduler.
  static Result<std::unique_ptr<InferenceScheduler>> Create(const SchedulerConfig& c,
                                                            const DetectorFactory& factory,
                                                            MetricsRegistry* metrics,
                                                            const std::string& target);
  // A hosted scheduler: one detector, no threads of its own; `host` (which must outlive the
  // scheduler's Shutdown) runs its inference. c.threads is not used; nor is c.max_wait_us:
  // a batch is what is waiting when the host gets to it.
  static Result<std::unique_ptr<InferenceScheduler>> CreateHosted(const SchedulerConfig& c,
                                                                  const DetectorFactory& factory,
                                                                  MetricsRegistry* metrics,
                                                                  const std::string& target,
                                                                  InferenceHost* host);
  ~InferenceScheduler();  // Shutdown()
  // Never blocks on inference. May call the superseded request's callback inline.
  void Submit(DetectRequest r) override;
  // Queues all of `rs` when they fit beside what is pending (they then complete as Submit's
  // do), else takes none and returns false: a caller's images never evict another caller's.
  // Each request must have a session of its own.
  bool SubmitAllIfRoom(std::vector<DetectRequest>& rs);
  // Stops the threads; pending requests complete with kShutdown.
  void Shutdown();
  size_t pending() const;
  int in_flight() const;
  bool hosted() const { return host_ != nullptr; }

  // Hosted: runs one batch of what is waiting (stale requests are answered as such), on the
  // caller's thread, the first in order (submission plus slack_ms) first. Returns when the first
  // request still waiting counts as submitted (the same order), or nullopt when none waits (or
  // after Shutdown).
  std::optional<double> RunPending();

 private:
  InferenceScheduler(const SchedulerConfig& c, MetricsRegistry* m, const std::string& target);
  void Run(Detector* det);
  struct Pending {
    DetectRequest req;
    double submit_ms;
    double order_ms() const { return submit_ms + req.slack_ms; }
  };
  // Takes a batch (same image size, type and kind, up to max_batch) once it is full or the
  // oldest has waited max_wait_us; returns stale requests separately.
  bool TakeBatch(std::vector<Pending>& batch, std::vector<Pending>& stale);
  // Answers `stale` as kStale and runs `batch` on `det`, answering each request.
  void RunBatch(Detector* det, std::vector<Pending>& batch, std::vector<Pending>& stale);
  // Moves what is past its deadline into `stale`.
  void DropStale(std::vector<Pending>& stale) REQUIRES(mu_);
  // Takes a batch of what waits: the first in order (FirstInOrder), and those of its image size,
  // type and kind, up to max_batch.
  void TakeReady(std::vector<Pending>& batch) REQUIRES(mu_);
  // The waiting request first in order: the earliest submission plus slack_ms. Not empty.
  std::deque<Pending>::iterator FirstInOrder() REQUIRES(mu_);
  // Hosted: tells the host when requests wait.
  void WakeHost() EXCLUDES(mu_);
  static void Finish(Pending& p, DetectResult&& r);

  const SchedulerConfig cfg_;
  InferenceHost* host_ = nullptr;  // hosted: runs RunPending; no threads_
  std::vector<std::unique_ptr<Detector>> detectors_;
  std::vector<std::thread> threads_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_ GUARDED_BY(mu_);
  int in_flight_ GUARDED_BY(mu_) = 0;
  bool stop_ GUARDED_BY(mu_) = false;
  // Metrics (owned by the registry, which outlives the scheduler).
  Histogram* batch_size_ = nullptr;
  Histogram* queue_ms_ = nullptr;
  Histogram* infer_batch_ms_ = nullptr;
  Histogram* infer_frame_ms_ = nullptr;
  Counter* stale_ = nullptr;
  Counter* superseded_ = nullptr;
  Counter* failed_ = nullptr;
  Gauge* in_flight_gauge_ = nullptr;
  std::unique_ptr<MetricsRegistry> own_metrics_;
};

}  // namespace veil
