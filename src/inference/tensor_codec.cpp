#include "inference/tensor_codec.h"

#include <cstring>

#include "vision/yunet.h"

namespace veil::kserve {
namespace {

constexpr const char* kUint8 = "UINT8";
constexpr const char* kFp32 = "FP32";

std::string ShapeText(const google::protobuf::RepeatedField<int64_t>& s) {
  std::string t = "[";
  for (int i = 0; i < s.size(); ++i) {
    if (i) t += ',';
    t += std::to_string(s[i]);
  }
  return t + "]";
}

int OutputIndex(const std::string& name) {
  const auto& names = YuNetOutputNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return int(i);
  return -1;
}

}  // namespace

const char* FormName(InputForm f) {
  return f == InputForm::kUint8Nhwc ? "UINT8 NHWC" : "FP32 NCHW";
}

const std::vector<ModelForm>& WorkerModels() {
  static const std::vector<ModelForm> m = {{"yunet", InputForm::kFp32Nchw, "input"},
                                           {"yunet_u8", InputForm::kUint8Nhwc, "image"}};
  return m;
}

const ModelForm* FindWorkerModel(const std::string& name) {
  for (const auto& m : WorkerModels())
    if (m.model == name) return &m;
  return nullptr;
}

void FillMetadata(const ModelForm& m, inference::ModelMetadataResponse* out) {
  out->set_name(m.model);
  out->add_versions()->assign(1, '1');
  out->set_platform("opencv_dnn_onnx");
  auto* in = out->add_inputs();
  in->set_name(m.input);
  if (m.form == InputForm::kUint8Nhwc) {
    in->set_datatype(kUint8);
    for (int64_t d : {-1, -1, -1, 3}) in->add_shape(d);
  } else {
    in->set_datatype(kFp32);
    for (int64_t d : {-1, 3, -1, -1}) in->add_shape(d);
  }
  for (size_t k = 0; k < YuNetOutputNames().size(); ++k) {
    auto* o = out->add_outputs();
    o->set_name(YuNetOutputNames()[k]);
    o->set_datatype(kFp32);
    for (int64_t d : {int64_t(-1), int64_t(-1), int64_t(YuNetColumns(int(k)))}) o->add_shape(d);
  }
  (*out->mutable_properties())["input_layout"] =
      m.form == InputForm::kUint8Nhwc ? "NHWC BGR" : "NCHW BGR 0..255";
}

Result<RemoteModel> ParseMetadata(const inference::ModelMetadataResponse& md) {
  if (md.inputs_size() != 1)
    return Status::Error("model '" + md.name() + "' has " + std::to_string(md.inputs_size()) +
                         " inputs; a YuNet model has one");
  const auto& in = md.inputs(0);
  RemoteModel r;
  r.io.model = md.name();
  r.io.input = in.name();
  const auto& s = in.shape();
  if (in.datatype() == kUint8 && s.size() == 4 && (s[3] == 3 || s[3] == -1)) {
    r.io.form = InputForm::kUint8Nhwc;
  } else if (in.datatype() == kFp32 && s.size() == 4 && (s[1] == 3 || s[1] == -1)) {
    r.io.form = InputForm::kFp32Nchw;
    if (s[2] > 0 || s[3] > 0) {
      if (s[2] <= 0 || s[3] <= 0 || s[2] % 32 || s[3] % 32)
        return Status::Error("model '" + md.name() + "' input shape " + ShapeText(s) +
                             " is not usable");
      r.fixed_size = {int(s[3]), int(s[2])};
    }
  } else {
    return Status::Error("model '" + md.name() + "' input " + in.name() + " " + in.datatype() +
                         " " + ShapeText(s) + " is neither UINT8 [N,H,W,3] nor FP32 [N,3,H,W]");
  }
  if (s[0] > 0) r.fixed_batch = int(s[0]);
  for (int k = 0; k < kYuNetDecodeOutputs; ++k) {
    bool found = false;
    for (const auto& o : md.outputs())
      if (o.name() == YuNetOutputNames()[k]) found = o.datatype() == kFp32;
    if (!found)
      return Status::Error("model '" + md.name() + "' has no FP32 output '" +
                           YuNetOutputNames()[k] + "': not a YuNet 2023mar model");
  }
  return r;
}

Status PackImages(const std::vector<cv::Mat>& images, const RemoteModel& m,
                  inference::ModelInferRequest* req) {
  if (images.empty() || int(images.size()) > kMaxWireBatch)
    return Status::Error("batch must hold 1-64 images");
  const cv::Size size = images[0].size();
  for (const auto& im : images)
    if (im.empty() || im.type() != CV_8UC3 || im.size() != size)
      return Status::Error("images must be non-empty BGR (CV_8UC3) of one size");
  const int n = int(images.size());
  req->set_model_name(m.io.model);
  auto* in = req->add_inputs();
  in->set_name(m.io.input);
  std::string* raw = req->add_raw_input_contents();
  if (m.io.form == InputForm::kUint8Nhwc) {
    in->set_datatype(kUint8);
    for (int64_t d : {int64_t(n), int64_t(size.height), int64_t(size.width), int64_t(3)})
      in->add_shape(d);
    const size_t row = size_t(size.width) * 3;
    raw->resize(size_t(n) * size.height * row);
    char* p = raw->data();
    for (const auto& im : images)
      for (int y = 0; y < size.height; ++y, p += row) std::memcpy(p, im.ptr(y), row);
  } else {
    const cv::Size padded = m.fixed_size.width > 0 ? m.fixed_size : YuNetPaddedSize(size);
    if (padded.width < size.width || padded.height < size.height)
      return Status::Error("detection input " + std::to_string(size.width) + "x" +
                           std::to_string(size.height) + " does not fit the model's fixed input " +
                           std::to_string(padded.width) + "x" + std::to_string(padded.height));
    in->set_datatype(kFp32);
    for (int64_t d : {int64_t(n), int64_t(3), int64_t(padded.height), int64_t(padded.width)})
      in->add_shape(d);
    cv::Mat blob;
    YuNetBlob(images, padded, blob);
    raw->assign(reinterpret_cast<const char*>(blob.ptr<float>()), blob.total() * sizeof(float));
  }
  for (int k = 0; k < kYuNetDecodeOutputs; ++k) req->add_outputs()->set_name(YuNetOutputNames()[k]);
  return Status::Ok();
}

Result<std::vector<cv::Mat>> UnpackOutputs(const inference::ModelInferResponse& resp, int n,
                                           cv::Size padded) {
  std::vector<cv::Mat> outs(kYuNetDecodeOutputs);
  const bool raw = resp.raw_output_contents_size() > 0;
  if (raw && resp.raw_output_contents_size() != resp.outputs_size())
    return Status::Error("answer has " + std::to_string(resp.outputs_size()) + " outputs but " +
                         std::to_string(resp.raw_output_contents_size()) + " raw contents");
  for (int i = 0; i < resp.outputs_size(); ++i) {
    const auto& o = resp.outputs(i);
    const int k = OutputIndex(o.name());
    if (k < 0 || k >= kYuNetDecodeOutputs) continue;  // not needed for decoding
    const int a = YuNetAnchors(k, padded), c = YuNetColumns(k);
    const auto& s = o.shape();
    // -1 once any dimension is negative or the product would pass 2^40, checked before
    // multiplying (fuzzing found the product itself overflowing: 2^40 x 2^40).
    constexpr int64_t kCap = int64_t(1) << 40;
    int64_t elems = 1;
    for (int64_t d : s)
      elems = (elems < 0 || d < 0 || d > kCap || (d > 0 && elems > kCap / d)) ? -1 : elems * d;
    if (o.datatype() != kFp32 || s.size() < 2 || s[0] != n || elems != int64_t(n) * a * c)
      return Status::Error("output " + o.name() + " is " + o.datatype() + " " + ShapeText(s) +
                           ", expected FP32 [" + std::to_string(n) + "," + std::to_string(a) + "," +
                           std::to_string(c) + "]");
    const int sz[3] = {n, a, c};
    cv::Mat m(3, sz, CV_32F);
    const size_t bytes = size_t(elems) * sizeof(float);
    if (raw) {
      const std::string& b = resp.raw_output_contents(i);
      if (b.size() != bytes)
        return Status::Error("output " + o.name() + " has " + std::to_string(b.size()) +
                             " bytes, expected " + std::to_string(bytes));
      std::memcpy(m.ptr<float>(), b.data(), bytes);
    } else {
      if (o.contents().fp32_contents_size() != elems)
        return Status::Error("output " + o.name() + " has " +
                             std::to_string(o.contents().fp32_contents_size()) +
                             " values, expected " + std::to_string(elems));
      std::memcpy(m.ptr<float>(), o.contents().fp32_contents().data(), bytes);
    }
    outs[k] = std::move(m);
  }
  for (int k = 0; k < kYuNetDecodeOutputs; ++k)
    if (outs[k].empty()) return Status::Error("answer lacks output " + YuNetOutputNames()[k]);
  return outs;
}

Result<std::vector<cv::Mat>> UnpackImages(const inference::ModelInferRequest& req,
                                          const ModelForm& m) {
  if (req.inputs_size() != 1)
    return Status::Error("model '" + m.model + "' takes one input, got " +
                         std::to_string(req.inputs_size()));
  const auto& in = req.inputs(0);
  if (in.name() != m.input)
    return Status::Error("model '" + m.model + "' has no input '" + in.name() +
                         "'; its input is '" + m.input + "'");
  const bool u8 = m.form == InputForm::kUint8Nhwc;
  const char* want = u8 ? kUint8 : kFp32;
  const auto& s = in.shape();
  if (in.datatype() != want || s.size() != 4)
    return Status::Error("input " + m.input + " must be " + want +
                         (u8 ? " [N,H,W,3]" : " [N,3,H,W]") + ", got " + in.datatype() + " " +
                         ShapeText(s));
  const int64_t n = s[0], ch = u8 ? s[3] : s[1], h = u8 ? s[1] : s[2], w = u8 ? s[2] : s[3];
  if (n < 1 || n > kMaxWireBatch || ch != 3 || h < 1 || w < 1 || h > kMaxWireSide ||
      w > kMaxWireSide)
    return Status::Error("input shape " + ShapeText(s) +
                         " out of range (batch 1-64, 3 channels, sides 1-4096)");
  if (!u8 && (h % 32 || w % 32))
    return Status::Error("FP32 input height and width must be multiples of 32, got " +
                         ShapeText(s));
  const size_t elems = size_t(n) * 3 * h * w;
  const char* data = nullptr;
  std::vector<float> typed_f;
  std::vector<uint8_t> typed_u;
  if (req.raw_input_contents_size() > 0) {
    if (req.raw_input_contents_size() != 1) return Status::Error("one raw input content expected");
    const std::string& b = req.raw_input_contents(0);
    if (b.size() != elems * (u8 ? 1 : 4))
      return Status::Error("input " + m.input + " has " + std::to_string(b.size()) +
                           " bytes, shape " + ShapeText(s) + " needs " +
                           std::to_string(elems * (u8 ? 1 : 4)));
    data = b.data();
  } else if (u8) {
    const auto& v = in.contents().uint_contents();
    if (size_t(v.size()) != elems)
      return Status::Error("input " + m.input + " has " + std::to_string(v.size()) +
                           " values, expected " + std::to_string(elems));
    typed_u.resize(elems);
    for (size_t i = 0; i < elems; ++i) {
      if (v[int(i)] > 255) return Status::Error("UINT8 value out of range");
      typed_u[i] = uint8_t(v[int(i)]);
    }
    data = reinterpret_cast<const char*>(typed_u.data());
  } else {
    const auto& v = in.contents().fp32_contents();
    if (size_t(v.size()) != elems)
      return Status::Error("input " + m.input + " has " + std::to_string(v.size()) +
                           " values, expected " + std::to_string(elems));
    data = reinterpret_cast<const char*>(v.data());
  }
  std::vector<cv::Mat> images;
  images.reserve(size_t(n));
  for (int64_t b = 0; b < n; ++b) {
    if (u8) {
      cv::Mat im(int(h), int(w), CV_8UC3);
      std::memcpy(im.data, data + size_t(b) * h * w * 3, size_t(h) * w * 3);
      images.push_back(std::move(im));
    } else {
      const float* base = reinterpret_cast<const float*>(data) + size_t(b) * 3 * h * w;
      std::vector<cv::Mat> planes;
      for (int c = 0; c < 3; ++c)
        planes.emplace_back(int(h), int(w), CV_32F, const_cast<float*>(base + size_t(c) * h * w));
      cv::Mat im;
      cv::merge(planes, im);  // copies: the image owns its pixels
      images.push_back(std::move(im));
    }
  }
  return images;
}

Result<std::vector<int>> RequestedOutputs(const inference::ModelInferRequest& req) {
  std::vector<int> which;
  for (const auto& o : req.outputs()) {
    const int k = OutputIndex(o.name());
    if (k < 0) return Status::Error("the model has no output '" + o.name() + "'");
    which.push_back(k);
  }
  if (which.empty())
    for (int k = 0; k < int(YuNetOutputNames().size()); ++k) which.push_back(k);
  return which;
}

Status PackOutputs(const std::vector<std::vector<cv::Mat>>& per_image,
                   const std::vector<int>& which, inference::ModelInferResponse* resp) {
  const int n = int(per_image.size());
  for (int k : which) {
    auto* o = resp->add_outputs();
    o->set_name(YuNetOutputNames()[k]);
    o->set_datatype(kFp32);
    std::string* raw = resp->add_raw_output_contents();
    int a = -1, c = -1;
    for (const auto& outs : per_image) {
      if (int(outs.size()) <= k) return Status::Error("worker: missing output");
      const cv::Mat& m = outs[k];
      if (m.type() != CV_32F || m.dims != 3 || !m.isContinuous())
        return Status::Error("worker: bad output tensor");
      if (a < 0) {
        a = m.size[1];
        c = m.size[2];
      } else if (a != m.size[1] || c != m.size[2]) {
        return Status::Error("worker: outputs differ in shape across the batch");
      }
      raw->append(reinterpret_cast<const char*>(m.ptr<float>()), m.total() * sizeof(float));
    }
    for (int64_t d : {int64_t(n), int64_t(a), int64_t(c)}) o->add_shape(d);
  }
  return Status::Ok();
}

}  // namespace veil::kserve
