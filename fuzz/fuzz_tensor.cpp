// libFuzzer target: KServe v2 messages from the network, as the worker and the server's
// remote targets read them: a ModelInferRequest (worker: images and requested outputs for
// each served model), a ModelInferResponse (client: the outputs decoding needs) and
// ModelMetadataResponse (client: is this a usable model). The first byte picks the message.
#include <cstddef>
#include <cstdint>

#include "inference/tensor_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t kind = data[0] % 3;
  ++data;
  --size;
  if (kind == 0) {
    inference::ModelInferRequest req;
    if (!req.ParseFromArray(data, int(size))) return 0;
    for (const auto& m : veil::kserve::WorkerModels()) (void)veil::kserve::UnpackImages(req, m);
    (void)veil::kserve::RequestedOutputs(req);
  } else if (kind == 1) {
    inference::ModelInferResponse resp;
    if (!resp.ParseFromArray(data, int(size))) return 0;
    for (int n : {1, 2})
      for (const cv::Size padded : {cv::Size(640, 384), cv::Size(32, 32)})
        (void)veil::kserve::UnpackOutputs(resp, n, padded);
  } else {
    inference::ModelMetadataResponse md;
    if (!md.ParseFromArray(data, int(size))) return 0;
    (void)veil::kserve::ParseMetadata(md);
  }
  return 0;
}
