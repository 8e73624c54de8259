#include "inference/worker_service.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "core/clock.h"
#include "inference/proto/kserve_v2.grpc.pb.h"
#include "inference/tensor_codec.h"

namespace veil {
namespace {

// The largest call taken: 64 MiB holds e.g. 23 FP32 detection copies of 640x384 or 100 UINT8
// ones; a bigger message is refused (RESOURCE_EXHAUSTED) before it is buffered.
constexpr int kMaxMessageBytes = 64 << 20;
constexpr const char* kVersion = "1";

// The answers to one ModelInfer call's images, filled by scheduler threads.
struct CallState {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<DetectResult> results;  // guarded by mu
  int left = 0;                       // guarded by mu
};

class Service final : public inference::GRPCInferenceService::Service {
 public:
  Service(InferenceScheduler* sched, MetricsRegistry* m, double default_deadline_ms, size_t max_queue)
      : sched_(sched), max_queue_(max_queue), default_deadline_ms_(default_deadline_ms) {
    for (const char* code : {"ok", "invalid", "deadline", "failed", "unavailable"})
      m_calls_[code] = &m->GetCounter("veil_worker_infer_calls_total", "ModelInfer calls by result",
                                      {{"result", code}});
    m_in_ =
        &m->GetCounter("veil_worker_bytes_total", "ModelInfer bytes", {{"direction", "received"}});
    m_out_ = &m->GetCounter("veil_worker_bytes_total", "ModelInfer bytes", {{"direction", "sent"}});
    m_frames_ = &m->GetCounter("veil_worker_frames_total", "Images inferred for callers");
    m_call_ms_ = &m->GetHistogram("veil_worker_call_seconds",
                                  "ModelInfer call, received -> answered, s", LatencyBucketsMs(), {}, kMsToSeconds);
  }
  void SetReady(bool r) { ready_ = r; }

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* resp) override {
    resp->set_live(true);
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* resp) override {
    resp->set_ready(ready_);
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* req,
                          inference::ModelReadyResponse* resp) override {
    if (Known(req->name(), req->version()) == nullptr)
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "no model '" + req->name() + "'");
    resp->set_ready(ready_);
    return grpc::Status::OK;
  }
  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* resp) override {
    resp->set_name("veil-worker");
    resp->set_version(VEIL_VERSION);
    return grpc::Status::OK;
  }
  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* req,
                             inference::ModelMetadataResponse* resp) override {
    const kserve::ModelForm* m = Known(req->name(), req->version());
    if (!m) return grpc::Status(grpc::StatusCode::NOT_FOUND, NotFound(req->name(), req->version()));
    kserve::FillMetadata(*m, resp);
    return grpc::Status::OK;
  }
  grpc::Status ModelInfer(grpc::ServerContext* ctx, const inference::ModelInferRequest* req,
                          inference::ModelInferResponse* resp) override {
    const double t0 = NowMs();
    grpc::Status s = Infer(ctx, req, resp);
    m_call_ms_->Observe(NowMs() - t0);
    m_in_->Inc(double(req->ByteSizeLong()));
    if (s.ok()) m_out_->Inc(double(resp->ByteSizeLong()));
    const char* code = s.ok() ? "ok"
                       : s.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
                               s.error_code() == grpc::StatusCode::NOT_FOUND
                           ? "invalid"
                       : s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ? "deadline"
                       : s.error_code() == grpc::StatusCode::UNAVAILABLE       ? "unavailable"
                                                                               : "failed";
    m_calls_[code]->Inc();
    return s;
  }

 private:
  const kserve::ModelForm* Known(const std::string& name, const std::string& version) const {
    if (!version.empty() && version != kVersion) return nullptr;
    return kserve::FindWorkerModel(name);
  }
  static std::string NotFound(const std::string& name, const std::string& version) {
    std::string list;
    for (const auto& m : kserve::WorkerModels()) list += (list.empty() ? "" : ", ") + m.model;
    return "no model '" + name + "'" + (version.empty() ? "" : " version '" + version + "'") +
           " (serving " + list + ", version 1)";
  }

  grpc::Status Infer(grpc::ServerContext* ctx, const inference::ModelInferRequest* req,
                     inference::ModelInferResponse* resp) {
    const kserve::ModelForm* m = Known(req->model_name(), req->model_version());
    if (!m)
      return grpc::Status(grpc::StatusCode::NOT_FOUND,
                          NotFound(req->model_name(), req->model_version()));
    if (!ready_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is shutting down");
    auto images = kserve::UnpackImages(*req, *m);
    if (!images) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, images.error());
    auto which = kserve::RequestedOutputs(*req);
    if (!which) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, which.error());
    // The caller's deadline is the request's: work that would answer after it is not started.
    const auto now = std::chrono::system_clock::now();
    double budget_ms = default_deadline_ms_;
    if (ctx->deadline() < now + std::chrono::hours(24 * 365))
      budget_ms = std::chrono::duration<double, std::milli>(ctx->deadline() - now).count();
    if (budget_ms <= 0)
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline passed before inference");
    auto state = std::make_shared<CallState>();
    const int n = int(images->size());
    state->results.resize(size_t(n));
    state->left = n;
    const double deadline = NowMs() + budget_ms;
    std::vector<DetectRequest> reqs(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      DetectRequest& r = reqs[size_t(i)];
      r.session =
          next_id_.fetch_add(1);  // one per image: nothing supersedes another caller's image
      r.frame_index = i;
      r.image = std::move((*images)[size_t(i)]);
      r.raw = true;
      r.deadline_ms = deadline;
      r.done = [state, i](DetectResult&& res) {
        std::lock_guard lk(state->mu);
        state->results[size_t(i)] = std::move(res);
        if (--state->left == 0) state->cv.notify_all();
      };
    }
    // All of the call's images or none: they never push other callers' images out of the queue.
    if (!sched_->SubmitAllIfRoom(reqs))
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          "the worker's queue has no room for " + std::to_string(n) + " images (" +
                              std::to_string(sched_->pending()) + " pending, inference.max_queue " +
                              std::to_string(max_queue_) + "): retry later or send fewer");
    {
      std::unique_lock lk(state->mu);
      // Started work finishes; a stalled detector must not hold the call forever.
      if (!state->cv.wait_for(lk, std::chrono::microseconds(int64_t((budget_ms + 1000) * 1000)),
                              [&] { return state->left == 0; }))
        return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                            "no answer from the detector in time");
    }
    std::vector<std::vector<cv::Mat>> outs;
    outs.reserve(size_t(n));
    for (auto& r : state->results) {
      switch (r.outcome) {
        case DetectOutcome::kOk:
          outs.push_back(std::move(r.outputs));
          break;
        case DetectOutcome::kStale:
        case DetectOutcome::kSuperseded:
          return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                              "dropped before inference: deadline passed or queue full");
        case DetectOutcome::kShutdown:
          return grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is shutting down");
        case DetectOutcome::kFailed:
          return grpc::Status(grpc::StatusCode::INTERNAL, "inference failed: " + r.error);
      }
    }
    resp->set_model_name(m->model);
    resp->set_model_version(kVersion);
    resp->set_id(req->id());
    if (Status s = kserve::PackOutputs(outs, *which, resp); !s)
      return grpc::Status(grpc::StatusCode::INTERNAL, s.message());
    m_frames_->Inc(double(n));
    return grpc::Status::OK;
  }

  InferenceScheduler* sched_;
  size_t max_queue_ = 0;
  const double default_deadline_ms_;
  std::atomic<bool> ready_{true};
  std::atomic<uint64_t> next_id_{1};
  std::map<std::string, Counter*> m_calls_;
  Counter *m_in_ = nullptr, *m_out_ = nullptr, *m_frames_ = nullptr;
  Histogram* m_call_ms_ = nullptr;
};

}  // namespace

struct Worker::Impl {
  std::unique_ptr<InferenceScheduler> sched;
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
  std::mutex mu;
  bool stopped = false;  // guarded by mu
};

Result<std::unique_ptr<Worker>> Worker::Start(const WorkerOptions& o,
                                              const DetectorFactory& factory,
                                              MetricsRegistry* metrics) {
  if (!metrics) return Status::Error("a metrics registry is required");
  auto sched = InferenceScheduler::Create(o.scheduler, factory, metrics, "worker");
  if (!sched) return sched.status();
  // The detector must be able to serve raw outputs: try one tiny image now, not on the first call.
  {
    auto det = factory();
    if (!det) return det.status();
    auto r = (*det)->Forward({cv::Mat(32, 32, CV_8UC3, cv::Scalar::all(0))});
    if (!r) return Status::Error("the worker cannot serve this detector: " + r.error());
  }
  std::unique_ptr<Worker> w(new Worker());
  w->impl_ = std::make_unique<Impl>();
  w->impl_->sched = std::move(*sched);
  w->impl_->service =
      std::make_unique<Service>(w->impl_->sched.get(), metrics, o.default_deadline_ms, o.scheduler.max_queue);
  grpc::ServerBuilder b;
  // gRPC sets SO_REUSEPORT by default: a second worker on a taken port would
  // silently share it. An address in use is an error here.
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  b.AddListeningPort(o.listen, grpc::InsecureServerCredentials(), &w->port_);
  b.RegisterService(w->impl_->service.get());
  b.SetMaxReceiveMessageSize(kMaxMessageBytes);
  b.SetMaxSendMessageSize(kMaxMessageBytes);
  w->impl_->server = b.BuildAndStart();
  if (!w->impl_->server || w->port_ == 0)
    return Status::Error("cannot listen on " + o.listen + " (in use or not a local address?)");
  return w;
}

void Worker::Shutdown(double grace_ms) {
  if (!impl_) return;
  {
    std::lock_guard lk(impl_->mu);
    if (impl_->stopped) return;
    impl_->stopped = true;
  }
  impl_->service->SetReady(false);
  if (impl_->server)
    impl_->server->Shutdown(std::chrono::system_clock::now() +
                            std::chrono::microseconds(int64_t(grace_ms * 1000)));
  impl_->sched->Shutdown();
}

Worker::~Worker() {
  Shutdown();
}

}  // namespace veil
