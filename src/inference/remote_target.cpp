#include "inference/remote_target.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "inference/proto/kserve_v2.grpc.pb.h"
#include "vision/yunet.h"

namespace veil {
namespace {

constexpr int kMaxMessageBytes = 256 << 20;

std::chrono::system_clock::time_point After(double ms) {
  return std::chrono::system_clock::now() + std::chrono::microseconds(int64_t(ms * 1000));
}

std::string Why(const grpc::Status& s) {
  static const char* names[] = {"OK",
                                "CANCELLED",
                                "UNKNOWN",
                                "INVALID_ARGUMENT",
                                "DEADLINE_EXCEEDED",
                                "NOT_FOUND",
                                "ALREADY_EXISTS",
                                "PERMISSION_DENIED",
                                "RESOURCE_EXHAUSTED",
                                "FAILED_PRECONDITION",
                                "ABORTED",
                                "OUT_OF_RANGE",
                                "UNIMPLEMENTED",
                                "INTERNAL",
                                "UNAVAILABLE",
                                "DATA_LOSS",
                                "UNAUTHENTICATED"};
  const int c = int(s.error_code());
  return std::string(c >= 0 && c <= 16 ? names[c] : "?") + ": " + s.error_message();
}

}  // namespace

struct RemoteTarget::Rpc {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<inference::GRPCInferenceService::Stub> stub;
};

RemoteTarget::RemoteTarget(RemoteOptions o, MetricsRegistry* metrics, const std::string& name)
    : o_(std::move(o)), rpc_(std::make_unique<Rpc>()) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Reconnect quickly after a worker restart (gRPC's default backoff reaches minutes).
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  rpc_->channel = grpc::CreateCustomChannel(o_.endpoint, grpc::InsecureChannelCredentials(), args);
  rpc_->stub = inference::GRPCInferenceService::NewStub(rpc_->channel);
  if (!metrics) {
    own_metrics_ = std::make_unique<MetricsRegistry>();
    metrics = own_metrics_.get();
  }
  m_sent_ = &metrics->GetCounter("veil_ai_wire_bytes_total",
                                 "Bytes of detection RPCs to and from a remote AI target",
                                 {{"target", name}, {"direction", "sent"}});
  m_received_ = &metrics->GetCounter("veil_ai_wire_bytes_total",
                                     "Bytes of detection RPCs to and from a remote AI target",
                                     {{"target", name}, {"direction", "received"}});
  m_frames_ =
      &metrics->GetCounter("veil_ai_wire_frames_total",
                           "Frames sent to a remote AI target for detection", {{"target", name}});
}

RemoteTarget::~RemoteTarget() = default;

// One health or metadata call with the probe deadline; `call` issues it on the stub.
template <typename Call>
Status ProbeCall(double timeout_ms, const std::string& what, Call call) {
  grpc::ClientContext ctx;
  ctx.set_deadline(After(timeout_ms));
  grpc::Status s = call(&ctx);
  return s.ok() ? Status::Ok() : Status::Error(what + ": " + Why(s));
}

Status RemoteTarget::FetchMetadata() {
  inference::ModelMetadataRequest req;
  req.set_name(o_.model);
  inference::ModelMetadataResponse resp;
  if (Status s = ProbeCall(
          o_.probe_timeout_ms, "ModelMetadata(" + o_.model + ")",
          [&](grpc::ClientContext* c) { return rpc_->stub->ModelMetadata(c, req, &resp); });
      !s)
    return s;
  auto m = kserve::ParseMetadata(resp);
  if (!m) return m.status();
  std::lock_guard lk(mu_);
  model_ = *m;
  return Status::Ok();
}

Status RemoteTarget::Probe() {
  inference::ServerReadyResponse server;
  if (Status s = ProbeCall(
          o_.probe_timeout_ms, "ServerReady",
          [&](grpc::ClientContext* c) { return rpc_->stub->ServerReady(c, {}, &server); });
      !s)
    return s;
  if (!server.ready()) return Status::Error("server not ready");
  inference::ModelReadyRequest req;
  req.set_name(o_.model);
  inference::ModelReadyResponse model;
  if (Status s =
          ProbeCall(o_.probe_timeout_ms, "ModelReady(" + o_.model + ")",
                    [&](grpc::ClientContext* c) { return rpc_->stub->ModelReady(c, req, &model); });
      !s)
    return s;
  if (!model.ready()) return Status::Error("model '" + o_.model + "' not ready");
  return FetchMetadata();  // a restarted endpoint may serve another form
}

std::optional<kserve::RemoteModel> RemoteTarget::model() const {
  std::lock_guard lk(mu_);
  return model_;
}

WireTotals RemoteTarget::wire() const {
  return {sent_.load(), received_.load(), frames_.load(), calls_.load()};
}

Result<std::vector<Detections>> RemoteTarget::Infer(const std::vector<cv::Mat>& images,
                                                    float score) {
  if (images.empty()) return std::vector<Detections>{};
  std::optional<kserve::RemoteModel> m = model();
  if (!m) {
    if (Status s = FetchMetadata(); !s) return s;
    m = model();
  }
  if (m->fixed_batch == 0 || m->fixed_batch == int(images.size()))
    return InferOnce(images, *m, score);
  if (m->fixed_batch != 1)
    return Status::Error("model '" + o_.model + "' takes exactly " +
                         std::to_string(m->fixed_batch) + " images a call");
  std::vector<Detections> all;
  for (const auto& im : images) {
    auto r = InferOnce({im}, *m, score);
    if (!r) return r.status();
    all.push_back(std::move(r->front()));
  }
  return all;
}

Result<std::vector<Detections>> RemoteTarget::InferOnce(const std::vector<cv::Mat>& images,
                                                        const kserve::RemoteModel& m, float score) {
  inference::ModelInferRequest req;
  if (Status s = kserve::PackImages(images, m, &req); !s) return s;
  req.set_id(std::to_string(calls_.fetch_add(1) + 1));
  grpc::ClientContext ctx;
  ctx.set_deadline(After(o_.deadline_ms));
  inference::ModelInferResponse resp;
  const size_t out_bytes = req.ByteSizeLong();
  grpc::Status s = rpc_->stub->ModelInfer(&ctx, req, &resp);
  sent_ += out_bytes;
  m_sent_->Inc(double(out_bytes));
  if (!s.ok()) return Status::Error("ModelInfer at " + o_.endpoint + ": " + Why(s));
  const size_t in_bytes = resp.ByteSizeLong();
  received_ += in_bytes;
  frames_ += images.size();
  m_received_->Inc(double(in_bytes));
  m_frames_->Inc(double(images.size()));
  const cv::Size size = images[0].size();
  const cv::Size padded = m.io.form == kserve::InputForm::kFp32Nchw && m.fixed_size.width > 0
                              ? m.fixed_size
                              : YuNetPaddedSize(size);
  auto outs = kserve::UnpackOutputs(resp, int(images.size()), padded);
  if (!outs) return Status::Error("ModelInfer at " + o_.endpoint + ": " + outs.error());
  std::vector<Detections> res;
  res.reserve(images.size());
  for (size_t b = 0; b < images.size(); ++b)
    res.push_back(YuNetDecode(*outs, int(b), padded, size, score, o_.nms_iou));
  return res;
}

}  // namespace veil
