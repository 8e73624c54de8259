// `veil worker` speaks the KServe v2 / Open Inference Protocol: a plain client
// built from src/inference/proto/kserve_v2.proto (nothing of veil's own
// client) calls the real worker binary on loopback with a real frame and
// decodes the raw outputs to the same boxes the in-process detector finds.
// Malformed calls get clear gRPC errors and the worker keeps serving.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <variant>

#include "inference/proto/kserve_v2.grpc.pb.h"
#include "load/child_server.h"
#include "media/reader.h"
#include "test_util.h"
#include "vision/preprocess.h"
#include "vision/yunet.h"

namespace veil::test {
namespace {

using inference::GRPCInferenceService;

struct WorkerFixture {
  std::unique_ptr<ChildServer> child;
  std::unique_ptr<GRPCInferenceService::Stub> stub;
  std::string log = TempPath("protocol-worker.log");
  explicit WorkerFixture(const std::vector<std::string>& worker_args = {}) {
    auto c = ChildServer::Start(worker_args, log, VEIL_BIN, "worker");
    EXPECT_TRUE(c.ok()) << c.error();
    if (!c.ok()) return;
    child = std::move(*c);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    stub = GRPCInferenceService::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(child->port()), grpc::InsecureChannelCredentials(), args));
  }
};

// A 720p frame of the test clip with faces, as the server's detection copy (640x360 BGR).
cv::Mat FrameWithFaces() {
  auto r = MediaReader::Open(Media("sample_720p30.ivf"));
  EXPECT_TRUE(r.ok());
  cv::Mat bgr;
  for (int i = 0; r.ok(); ++i) {
    ReadItem it = (*r)->Next();
    if (std::holds_alternative<EndOfStream>(it)) break;
    auto* f = std::get_if<FramePtr>(&it);
    if (!f || i < 150) continue;  // a close-up of an actor
    DownscaleToBgr(**f, FitSize((*f)->width, (*f)->height, {640, 360}), bgr);
    break;
  }
  return bgr;
}

grpc::Status Infer(GRPCInferenceService::Stub& stub, const inference::ModelInferRequest& req,
                   inference::ModelInferResponse* resp) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return stub.ModelInfer(&ctx, req, resp);
}

// The request a KServe client writes by hand: one input tensor, raw bytes.
inference::ModelInferRequest U8Request(const cv::Mat& im, int n = 1) {
  inference::ModelInferRequest req;
  req.set_model_name("yunet_u8");
  req.set_id("frame-150");
  auto* in = req.add_inputs();
  in->set_name("image");
  in->set_datatype("UINT8");
  for (int64_t d : {int64_t(n), int64_t(im.rows), int64_t(im.cols), int64_t(3)}) in->add_shape(d);
  std::string* raw = req.add_raw_input_contents();
  for (int b = 0; b < n; ++b) raw->append(reinterpret_cast<const char*>(im.data), im.total() * 3);
  return req;
}

// Raw outputs -> boxes, by output name, with the shapes the response declares.
Detections Decode(const inference::ModelInferResponse& resp, int item, cv::Size image) {
  const cv::Size padded = YuNetPaddedSize(image);
  std::vector<cv::Mat> outs(kYuNetDecodeOutputs);
  for (int i = 0; i < resp.outputs_size(); ++i) {
    const auto& o = resp.outputs(i);
    for (int k = 0; k < kYuNetDecodeOutputs; ++k) {
      if (o.name() != YuNetOutputNames()[k]) continue;
      EXPECT_EQ(o.datatype(), "FP32");
      EXPECT_EQ(o.shape_size(), 3);
      const int sz[3] = {int(o.shape(0)), int(o.shape(1)), int(o.shape(2))};
      EXPECT_EQ(sz[1], YuNetAnchors(k, padded)) << o.name();
      cv::Mat m(3, sz, CV_32F);
      EXPECT_EQ(resp.raw_output_contents(i).size(), m.total() * 4) << o.name();
      std::memcpy(m.data, resp.raw_output_contents(i).data(),
                  std::min(m.total() * 4, resp.raw_output_contents(i).size()));
      outs[k] = m;
    }
  }
  for (const auto& m : outs)
    if (m.empty()) return {};
  return YuNetDecode(outs, item, padded, image, 0.3f, 0.3f);
}

void ExpectSameBoxes(const Detections& a, const Detections& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_GT(IoU(a[i].box, b[i].box), 0.999) << what << " box " << i;
    EXPECT_NEAR(a[i].score, b[i].score, 1e-4) << what << " box " << i;
  }
}

TEST(WorkerProtocol, HealthMetadataAndInferMatchTheInProcessDetector) {
  WorkerFixture w;
  ASSERT_TRUE(w.stub) << w.log;
  {
    grpc::ClientContext c1, c2, c3;
    inference::ServerLiveResponse live;
    inference::ServerReadyResponse ready;
    inference::ServerMetadataResponse meta;
    ASSERT_TRUE(w.stub->ServerLive(&c1, {}, &live).ok());
    ASSERT_TRUE(w.stub->ServerReady(&c2, {}, &ready).ok());
    ASSERT_TRUE(w.stub->ServerMetadata(&c3, {}, &meta).ok());
    EXPECT_TRUE(live.live());
    EXPECT_TRUE(ready.ready());
    EXPECT_EQ(meta.name(), "veil-worker");
  }
  for (const char* model : {"yunet", "yunet_u8"}) {
    grpc::ClientContext c1, c2;
    inference::ModelReadyRequest rr;
    rr.set_name(model);
    inference::ModelReadyResponse ready;
    ASSERT_TRUE(w.stub->ModelReady(&c1, rr, &ready).ok());
    EXPECT_TRUE(ready.ready()) << model;
    inference::ModelMetadataRequest mr;
    mr.set_name(model);
    inference::ModelMetadataResponse md;
    ASSERT_TRUE(w.stub->ModelMetadata(&c2, mr, &md).ok());
    ASSERT_EQ(md.inputs_size(), 1);
    EXPECT_EQ(md.inputs(0).datatype(), std::string(model) == "yunet" ? "FP32" : "UINT8");
    EXPECT_EQ(md.outputs_size(), 12);
    EXPECT_EQ(md.outputs(0).name(), "cls_8");
  }

  const cv::Mat im = FrameWithFaces();
  ASSERT_FALSE(im.empty());
  auto local = LoadDetector({});
  ASSERT_TRUE(local.ok());
  auto want = (*local)->Detect({im}, 0.3f);
  ASSERT_TRUE(want.ok());
  ASSERT_GE(want->front().size(), 1u) << "the frame shows a face";

  // UINT8 NHWC, two images in one call, every output.
  inference::ModelInferResponse u8;
  grpc::Status s = Infer(*w.stub, U8Request(im, 2), &u8);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(u8.id(), "frame-150");
  EXPECT_EQ(u8.outputs_size(), 12);
  EXPECT_EQ(u8.outputs(0).shape(0), 2);
  ExpectSameBoxes(Decode(u8, 0, im.size()), want->front(), "UINT8 item 0");
  ExpectSameBoxes(Decode(u8, 1, im.size()), want->front(), "UINT8 item 1");

  // FP32 NCHW as Triton takes it (the graph's own input), only the 9 outputs decoding needs.
  inference::ModelInferRequest f;
  f.set_model_name("yunet");
  auto* in = f.add_inputs();
  in->set_name("input");
  in->set_datatype("FP32");
  const cv::Size padded = YuNetPaddedSize(im.size());
  for (int64_t d : {int64_t(1), int64_t(3), int64_t(padded.height), int64_t(padded.width)})
    in->add_shape(d);
  cv::Mat blob;
  YuNetBlob({im}, padded, blob);
  f.add_raw_input_contents()->assign(reinterpret_cast<const char*>(blob.data), blob.total() * 4);
  for (int k = 0; k < kYuNetDecodeOutputs; ++k) f.add_outputs()->set_name(YuNetOutputNames()[k]);
  inference::ModelInferResponse fr;
  s = Infer(*w.stub, f, &fr);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(fr.outputs_size(), kYuNetDecodeOutputs);
  ExpectSameBoxes(Decode(fr, 0, im.size()), want->front(), "FP32");

  const size_t u8_bytes = U8Request(im).ByteSizeLong();
  std::printf(
      "wire bytes per 640x360 frame: UINT8 request %zu, FP32 request %zu, answer with 9 outputs "
      "%zu, with 12 %zu\n",
      u8_bytes, f.ByteSizeLong(), fr.ByteSizeLong(), u8.ByteSizeLong() / 2);
  EXPECT_LT(u8_bytes, f.ByteSizeLong() / 3) << "UINT8 is about a quarter of FP32";
  EXPECT_EQ(w.child->Stop(), 0);
}

TEST(WorkerProtocol, MalformedCallsGetClearErrorsAndTheWorkerKeepsServing) {
  WorkerFixture w;
  ASSERT_TRUE(w.stub) << w.log;
  const cv::Mat im(64, 96, CV_8UC3, cv::Scalar(90, 120, 150));
  struct Case {
    const char* what;
    std::function<void(inference::ModelInferRequest&)> edit;
    grpc::StatusCode code;
  };
  const std::vector<Case> cases = {
      {"unknown model", [](auto& r) { r.set_model_name("resnet"); }, grpc::StatusCode::NOT_FOUND},
      {"unknown version", [](auto& r) { r.set_model_version("7"); }, grpc::StatusCode::NOT_FOUND},
      {"no input", [](auto& r) { r.clear_inputs(); }, grpc::StatusCode::INVALID_ARGUMENT},
      {"wrong input name", [](auto& r) { r.mutable_inputs(0)->set_name("x"); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"wrong datatype", [](auto& r) { r.mutable_inputs(0)->set_datatype("FP16"); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"rank 3", [](auto& r) { r.mutable_inputs(0)->mutable_shape()->RemoveLast(); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"4 channels", [](auto& r) { r.mutable_inputs(0)->set_shape(3, 4); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"batch 0", [](auto& r) { r.mutable_inputs(0)->set_shape(0, 0); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"negative side", [](auto& r) { r.mutable_inputs(0)->set_shape(1, -64); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"absurd side", [](auto& r) { r.mutable_inputs(0)->set_shape(2, int64_t(1) << 40); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"bytes short", [](auto& r) { r.mutable_raw_input_contents(0)->resize(100); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"bytes long", [](auto& r) { r.mutable_raw_input_contents(0)->append("xyz"); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"no contents", [](auto& r) { r.clear_raw_input_contents(); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"unknown output", [](auto& r) { r.add_outputs()->set_name("boxes"); },
       grpc::StatusCode::INVALID_ARGUMENT},
      {"FP32 side not /32",
       [](auto& r) {
         r.set_model_name("yunet");
         auto* in = r.mutable_inputs(0);
         in->set_name("input");
         in->set_datatype("FP32");
         in->clear_shape();
         for (int64_t d : {1, 3, 40, 64}) in->add_shape(d);
         r.mutable_raw_input_contents(0)->assign(size_t(3) * 40 * 64 * 4, '\0');
       },
       grpc::StatusCode::INVALID_ARGUMENT},
  };
  for (const Case& c : cases) {
    inference::ModelInferRequest req = U8Request(im);
    c.edit(req);
    inference::ModelInferResponse resp;
    grpc::Status s = Infer(*w.stub, req, &resp);
    EXPECT_EQ(s.error_code(), c.code) << c.what << ": " << s.error_message();
    EXPECT_FALSE(s.error_message().empty()) << c.what;
  }
  // Typed contents (no raw bytes) are accepted too.
  inference::ModelInferRequest typed = U8Request(im);
  typed.clear_raw_input_contents();
  for (size_t i = 0; i < im.total() * 3; ++i)
    typed.mutable_inputs(0)->mutable_contents()->add_uint_contents(im.data[i]);
  inference::ModelInferResponse resp;
  grpc::Status s = Infer(*w.stub, typed, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // Still serving a real call after all that.
  inference::ModelInferResponse ok;
  s = Infer(*w.stub, U8Request(im), &ok);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(w.child->alive());
  // A second worker on the same port is refused, not silently sharing it (gRPC's SO_REUSEPORT is off).
  const std::string log2 = TempPath("protocol-worker-2.log");
  auto second = ChildServer::Start({}, log2, VEIL_BIN, "worker", "127.0.0.1:" + std::to_string(w.child->port()));
  EXPECT_FALSE(second.ok()) << "two workers on one port";
  EXPECT_EQ(w.child->Stop(), 0);
}

// Issue 13: the worker took 256 MiB messages, and a caller's images could push other callers'
// pending images out of the queue. Now a message over 64 MiB is refused before it is buffered,
// and a call whose images do not all fit beside what is pending is refused whole at once.
TEST(WorkerProtocol, OversizedCallsAreRefusedAndNeverEvictOthers) {
  WorkerFixture w({"--set", "inference.max_queue=8"});
  ASSERT_TRUE(w.stub) << w.log;
  inference::ModelInferResponse resp;
  const cv::Mat big(4000, 6000, CV_8UC3, cv::Scalar(1, 2, 3));  // 72 MB
  const cv::Mat im(360, 640, CV_8UC3, cv::Scalar(90, 120, 150));
  // Built before the clock starts: under ASan on a loaded CI machine building the 72-MB request
  // alone pushed the two calls past the bound once (4.1 s).
  const inference::ModelInferRequest big_req = U8Request(big), nine = U8Request(im, 9);
  const auto t0 = std::chrono::steady_clock::now();
  grpc::Status st = Infer(*w.stub, big_req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  st = Infer(*w.stub, nine, &resp);  // the queue holds 8 here (inference.max_queue)
  EXPECT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << st.error_message();
  EXPECT_NE(st.error_message().find("no room"), std::string::npos) << st.error_message();
#if defined(VEIL_SANITIZED_BUILD)
  const auto bound = std::chrono::seconds(10);  // sanitized: several times slower everywhere
#else
  const auto bound = std::chrono::seconds(3);
#endif
  EXPECT_LT(std::chrono::steady_clock::now() - t0, bound) << "refused at once, not after inference";
  st = Infer(*w.stub, U8Request(im, 2), &resp);
  EXPECT_TRUE(st.ok()) << "the worker keeps serving: " << st.error_message();
}

}  // namespace
}  // namespace veil::test
