// Detection tensors on the wire (KServe v2 / Open Inference Protocol): the
// downscaled detection input packed by a veil server, unpacked by a worker,
// and the model's raw outputs on the way back. Only the small detection copy
// ever crosses the wire, never the full frame. Every size, shape and type is
// checked: a malformed request or answer is an error, never a crash.
//
// Two input forms of the YuNet model:
//   UINT8 [N, H, W, 3]  BGR pixels as they are (1 byte a pixel-channel); the
//                       worker pads to a multiple of 32.
//   FP32  [N, 3, H, W]  the ONNX graph's own input ("input", BGR 0..255,
//                       H and W multiples of 32): what NVIDIA Triton serving
//                       face_detection_yunet_2023mar.onnx expects.
// Outputs: the graph's FP32 tensors cls/obj/bbox/kps_{8,16,32}, [N, anchors, C].
#pragma once
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "core/status.h"
#include "inference/proto/kserve_v2.pb.h"

namespace veil::kserve {

enum class InputForm { kUint8Nhwc, kFp32Nchw };
const char* FormName(InputForm f);  // "UINT8 NHWC" / "FP32 NCHW"

constexpr int kMaxWireBatch = 64;
constexpr int kMaxWireSide = 4096;

// One model as a worker serves it (and a client expects it).
struct ModelForm {
  std::string model;  // model name
  InputForm form = InputForm::kUint8Nhwc;
  std::string input;  // input tensor name
};
// The models `veil worker` serves: "yunet" (FP32, Triton's form) and "yunet_u8" (UINT8).
const std::vector<ModelForm>& WorkerModels();
const ModelForm* FindWorkerModel(const std::string& name);
void FillMetadata(const ModelForm& m, inference::ModelMetadataResponse* out);

// What a client learned from ModelMetadata of a remote model.
struct RemoteModel {
  ModelForm io;
  int fixed_batch = 0;        // 0: variable; else every call carries exactly this many images
  cv::Size fixed_size{0, 0};  // FP32 form with fixed H, W in the metadata (0: variable)
};
// Checks that the metadata describes a YuNet-compatible model (one input in
// one of the two forms, the 9 outputs decoding needs) and says how to call it.
Result<RemoteModel> ParseMetadata(const inference::ModelMetadataResponse& md);

// Client: the request's input tensor and the outputs decoding needs.
// Images are CV_8UC3, one size. FP32: padded to a multiple of 32 (zeros).
Status PackImages(const std::vector<cv::Mat>& images, const RemoteModel& m,
                  inference::ModelInferRequest* req);
// Client: the decoding outputs (YuNetOutputNames()[0..8]) as [n, anchors, C]
// CV_32F Mats, checked against the padded input size.
Result<std::vector<cv::Mat>> UnpackOutputs(const inference::ModelInferResponse& resp, int n,
                                           cv::Size padded);

// Worker: the images of a request (CV_8UC3 for UINT8, CV_32FC3 for FP32).
Result<std::vector<cv::Mat>> UnpackImages(const inference::ModelInferRequest& req,
                                          const ModelForm& m);
// Worker: indices into YuNetOutputNames() that the request asks for (all when none named).
Result<std::vector<int>> RequestedOutputs(const inference::ModelInferRequest& req);
// Worker: per image, the 12 outputs [1, anchors, C]; writes the requested ones as raw contents.
Status PackOutputs(const std::vector<std::vector<cv::Mat>>& per_image,
                   const std::vector<int>& which, inference::ModelInferResponse* resp);

}  // namespace veil::kserve
