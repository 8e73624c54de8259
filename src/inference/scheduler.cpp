#include "inference/scheduler.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/clock.h"
#include "core/thread_cpu.h"

namespace veil {

const char* OutcomeName(DetectOutcome o) {
  switch (o) {
    case DetectOutcome::kOk:
      return "ok";
    case DetectOutcome::kFailed:
      return "failed";
    case DetectOutcome::kStale:
      return "stale";
    case DetectOutcome::kSuperseded:
      return "superseded";
    case DetectOutcome::kShutdown:
      return "shutdown";
  }
  return "?";
}

Status Validate(const SchedulerConfig& c) {
  // The ranges of the [inference] keys (veil serve's targets and veil worker), declared here only.
  const auto bad = [](const char* key, const char* range, int64_t got) {
    return Status::Error(std::string("inference.") + key + " must be in " + range + ", got " + std::to_string(got));
  };
  if (c.max_batch < 1 || c.max_batch > 64) return bad("max_batch", "[1, 64]", c.max_batch);
  if (c.max_wait_us < 0 || c.max_wait_us > 100000) return bad("max_wait_us", "[0, 100000]", c.max_wait_us);
  if (c.threads < 1 || c.threads > 64) return bad("threads", "[1, 64]", c.threads);
  if (c.max_queue < 1 || c.max_queue > 100000) return bad("max_queue", "[1, 100000]", int64_t(c.max_queue));
  if (c.nice < 0 || c.nice > 19) return bad("nice", "[0, 19]", c.nice);
  return Status::Ok();
}

InferenceScheduler::InferenceScheduler(const SchedulerConfig& c, MetricsRegistry* m,
                                       const std::string& target)
    : cfg_(c) {
  if (!m) {
    own_metrics_ = std::make_unique<MetricsRegistry>();
    m = own_metrics_.get();
  }
  const Labels l = {{"target", target}};
  std::vector<double> sizes;
  for (int b = 1; b <= 64; b *= 2) sizes.push_back(b);
  batch_size_ = &m->GetHistogram("veil_ai_batch_size", "Frames per inference batch", sizes, l);
  queue_ms_ = &m->GetHistogram("veil_ai_queue_wait_seconds", "Submit to inference start, s",
                               LatencyBucketsMs(), l, kMsToSeconds);
  infer_batch_ms_ = &m->GetHistogram("veil_ai_infer_batch_seconds", "Inference time per batch, s",
                                     LatencyBucketsMs(), l, kMsToSeconds);
  infer_frame_ms_ =
      &m->GetHistogram("veil_ai_infer_frame_seconds", "Inference time per frame (batch / size), s",
                       LatencyBucketsMs(), l, kMsToSeconds);
  stale_ = &m->GetCounter("veil_ai_stale_drops_total",
                          "Requests dropped before inference: deadline passed", l);
  superseded_ = &m->GetCounter("veil_ai_superseded_total",
                               "Requests replaced by a newer frame of the same session", l);
  failed_ = &m->GetCounter("veil_ai_failures_total", "Requests whose inference failed", l);
  in_flight_gauge_ = &m->GetGauge("veil_ai_in_flight", "Requests in inference now", l);
}

Result<std::unique_ptr<InferenceScheduler>> InferenceScheduler::Create(
    const SchedulerConfig& c, const DetectorFactory& factory, MetricsRegistry* metrics,
    const std::string& target) {
  if (Status s = Validate(c); !s) return s;
  std::unique_ptr<InferenceScheduler> s(new InferenceScheduler(c, metrics, target));
  for (int i = 0; i < c.threads; ++i) {
    auto d = factory();
    if (!d) return d.status();
    s->detectors_.push_back(std::move(*d));
  }
  for (auto& d : s->detectors_)
    s->threads_.emplace_back([p = s.get(), det = d.get()] {
      NameThisThread("infer");
      p->Run(det);
    });
  return s;
}

Result<std::unique_ptr<InferenceScheduler>> InferenceScheduler::CreateHosted(
    const SchedulerConfig& c, const DetectorFactory& factory, MetricsRegistry* metrics,
    const std::string& target, InferenceHost* host) {
  if (!host) return Status::Error("a hosted inference scheduler needs its host");
  if (Status s = Validate(c); !s) return s;
  std::unique_ptr<InferenceScheduler> s(new InferenceScheduler(c, metrics, target));
  auto d = factory();
  if (!d) return d.status();
  s->detectors_.push_back(std::move(*d));
  s->host_ = host;
  return s;
}

InferenceScheduler::~InferenceScheduler() {
  Shutdown();
}

void InferenceScheduler::Finish(Pending& p, DetectResult&& r) {
  r.session = p.req.session;
  r.frame_index = p.req.frame_index;
  if (!p.req.done) return;
  try {
    p.req.done(std::move(r));
  } catch (const std::exception& e) {  // a caller's callback must not end the inference thread
    std::fprintf(stderr, "veil: a detection callback threw: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "veil: a detection callback threw an unknown exception\n");
  }
}

void InferenceScheduler::Submit(DetectRequest r) {
  std::vector<Pending> dropped;
  std::vector<DetectOutcome> why;
  {
    MutexLock lk(mu_);
    if (stop_) {
      dropped.push_back({std::move(r), NowMs()});
      why.push_back(DetectOutcome::kShutdown);
    } else {
      for (auto it = queue_.begin(); it != queue_.end(); ++it) {
        if (it->req.session == r.session) {  // latest frame wins within a session
          dropped.push_back(std::move(*it));
          why.push_back(DetectOutcome::kSuperseded);
          queue_.erase(it);
          superseded_->Inc();
          break;
        }
      }
      queue_.push_back({std::move(r), NowMs()});
      if (queue_.size() > cfg_.max_queue) {  // bounded: the oldest pending request goes
        dropped.push_back(std::move(queue_.front()));
        why.push_back(DetectOutcome::kStale);
        queue_.pop_front();
        stale_->Inc();
      }
    }
  }
  cv_.notify_one();
  for (size_t i = 0; i < dropped.size(); ++i) {
    DetectResult res;
    res.outcome = why[i];
    Finish(dropped[i], std::move(res));
  }
  WakeHost();
}

void InferenceScheduler::WakeHost() {
  if (!host_) return;
  // Under the lock: Shutdown's stop_ then orders every Wake before its Forget.
  MutexLock lk(mu_);
  if (stop_ || queue_.empty()) return;
  host_->Wake(this, FirstInOrder()->order_ms());
}

std::deque<InferenceScheduler::Pending>::iterator InferenceScheduler::FirstInOrder() {
  return std::min_element(queue_.begin(), queue_.end(),
                          [](const Pending& a, const Pending& b) { return a.order_ms() < b.order_ms(); });
}

bool InferenceScheduler::TakeBatch(std::vector<Pending>& batch, std::vector<Pending>& stale) {
  MutexLock lk(mu_);
  for (;;) {
    lk.Wait(cv_, [&]() REQUIRES(mu_) { return stop_ || !queue_.empty(); });
    if (stop_) return false;
    DropStale(stale);
    if (queue_.empty()) {
      if (!stale.empty()) return true;
      continue;
    }
    // Wait for a fuller batch, but never past max_wait after the oldest arrived.
    const double wait_until = queue_.front().submit_ms + cfg_.max_wait_us / 1000.0;
    if (int(queue_.size()) < cfg_.max_batch && NowMs() < wait_until) {
      lk.WaitFor(cv_, std::chrono::microseconds(int64_t((wait_until - NowMs()) * 1000) + 1),
                 [&]() REQUIRES(mu_) { return stop_ || int(queue_.size()) >= cfg_.max_batch; });
      if (stop_) return false;
      if (int(queue_.size()) < cfg_.max_batch && NowMs() < wait_until) continue;
      if (queue_.empty()) continue;
    }
    TakeReady(batch);
    return true;
  }
}

void InferenceScheduler::DropStale(std::vector<Pending>& stale) {
  // Drop what is already too old to be worth inference.
  const double now = NowMs();
  for (auto it = queue_.begin(); it != queue_.end();) {
    if (it->req.deadline_ms > 0 && now > it->req.deadline_ms) {
      stale.push_back(std::move(*it));
      it = queue_.erase(it);
      stale_->Inc();
    } else {
      ++it;
    }
  }
}

void InferenceScheduler::TakeReady(std::vector<Pending>& batch) {
  if (queue_.empty()) return;
  // The first in order (submission plus slack) leads the batch; the others of its kind join it.
  auto first_it = FirstInOrder();
  batch.push_back(std::move(*first_it));
  queue_.erase(first_it);
  const DetectRequest& first = batch.front().req;
  const cv::Size size = first.image.size();
  const int type = first.image.type();
  const bool raw = first.raw;
  for (auto it = queue_.begin(); it != queue_.end() && int(batch.size()) < cfg_.max_batch;) {
    if (it->req.image.size() == size && it->req.image.type() == type && it->req.raw == raw) {
      batch.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  in_flight_ += int(batch.size());
  in_flight_gauge_->Add(double(batch.size()));
}

std::optional<double> InferenceScheduler::RunPending() {
  std::vector<Pending> batch, stale;
  {
    MutexLock lk(mu_);
    if (stop_) return std::nullopt;
    DropStale(stale);
    TakeReady(batch);
  }
  RunBatch(detectors_.front().get(), batch, stale);
  MutexLock lk(mu_);
  if (stop_ || queue_.empty()) return std::nullopt;
  return FirstInOrder()->order_ms();
}

void InferenceScheduler::Run(Detector* det) {
  // Linux gives each thread its own nice value; raising it needs no privilege.
  if (cfg_.nice > 0 && setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), cfg_.nice) != 0)
    std::fprintf(stderr, "veil: inference.nice %d not applied: %s\n", cfg_.nice, std::strerror(errno));
  for (;;) {
    std::vector<Pending> batch, stale;
    const bool go = TakeBatch(batch, stale);  // none taken when it stops
    RunBatch(det, batch, stale);
    if (!go) return;
  }
}

void InferenceScheduler::RunBatch(Detector* det, std::vector<Pending>& batch, std::vector<Pending>& stale) {
  for (auto& p : stale) {
    DetectResult r;
    r.outcome = DetectOutcome::kStale;
    r.queue_ms = NowMs() - p.submit_ms;
    Finish(p, std::move(r));
  }
  if (batch.empty()) return;
  const double t0 = NowMs();
  std::vector<cv::Mat> images;
  images.reserve(batch.size());
  for (auto& p : batch) images.push_back(p.req.image);
  // One threshold per batch: the lowest asked for; each request filters its own below.
  float score = batch.front().req.score_threshold;
  for (auto& p : batch) score = std::min(score, p.req.score_threshold);
  const bool raw = batch.front().req.raw;
  Result<std::vector<Detections>> res = std::vector<Detections>{};
  Result<std::vector<std::vector<cv::Mat>>> outs = std::vector<std::vector<cv::Mat>>{};
  // A detector that throws (cv::dnn does on inputs it cannot take) fails this batch; the
  // thread, and the process, go on.
  try {
    if (raw)
      outs = det->Forward(images);
    else
      res = det->Detect(images, score);
  } catch (const std::exception& e) {
    const Status thrown = Status::Error(std::string("the detector threw: ") + e.what());
    if (raw) outs = thrown;
    else res = thrown;
  } catch (...) {
    const Status thrown = Status::Error("the detector threw an unknown exception");
    if (raw) outs = thrown;
    else res = thrown;
  }
  const double t1 = NowMs();
  batch_size_->Observe(double(batch.size()));
  infer_batch_ms_->Observe(t1 - t0);
  infer_frame_ms_->Observe((t1 - t0) / batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    DetectResult r;
    r.queue_ms = t0 - batch[i].submit_ms;
    r.infer_ms = t1 - t0;
    r.batch_size = int(batch.size());
    queue_ms_->Observe(r.queue_ms);
    if (raw) {
      if (!outs || outs->size() != batch.size()) {
        r.outcome = DetectOutcome::kFailed;
        r.error = outs ? "detector returned a wrong number of results" : outs.error();
        failed_->Inc();
      } else {
        r.outputs = std::move((*outs)[i]);
      }
    } else if (!res || res->size() != batch.size()) {
      r.outcome = DetectOutcome::kFailed;
      r.error = res ? "detector returned a wrong number of results" : res.error();
      failed_->Inc();
    } else {
      for (const auto& d : (*res)[i])
        if (d.score >= batch[i].req.score_threshold) r.detections.push_back(d);
    }
    Finish(batch[i], std::move(r));
  }
  {
    MutexLock lk(mu_);
    in_flight_ -= int(batch.size());
  }
  in_flight_gauge_->Add(-double(batch.size()));
}

void InferenceScheduler::Shutdown() {
  std::deque<Pending> left;
  {
    MutexLock lk(mu_);
    if (stop_ && threads_.empty()) return;
    stop_ = true;
    left.swap(queue_);
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  if (host_) host_->Forget(this);  // a batch it runs now ends first
  for (auto& p : left) {
    DetectResult r;
    r.outcome = DetectOutcome::kShutdown;
    Finish(p, std::move(r));
  }
}

bool InferenceScheduler::SubmitAllIfRoom(std::vector<DetectRequest>& rs) {
  {
    MutexLock lk(mu_);
    if (stop_ || queue_.size() + rs.size() > cfg_.max_queue) return false;
    const double now = NowMs();
    for (auto& r : rs) queue_.push_back({std::move(r), now});
  }
  cv_.notify_all();
  WakeHost();
  return true;
}

size_t InferenceScheduler::pending() const {
  MutexLock lk(mu_);
  return queue_.size();
}

int InferenceScheduler::in_flight() const {
  MutexLock lk(mu_);
  return in_flight_;
}

}  // namespace veil
