#include "vision/yunet.h"

#include <cmath>

#include "vision/yunet_engine.h"

namespace veil {
namespace {
constexpr int kStrides[3] = {8, 16, 32};

template <typename T>
void CopyPlanes(const cv::Mat& im, cv::Size padded, float* c0, float* c1, float* c2) {
  for (int y = 0; y < std::min(im.rows, padded.height); ++y) {
    const T* p = im.ptr<T>(y);
    const size_t o = size_t(y) * padded.width;
    const int w = std::min(im.cols, padded.width);
    for (int x = 0; x < w; ++x) {
      c0[o + x] = float(p[3 * x]);
      c1[o + x] = float(p[3 * x + 1]);
      c2[o + x] = float(p[3 * x + 2]);
    }
  }
}
}  // namespace

const std::vector<std::string>& YuNetOutputNames() {
  // Never destroyed: a detection still running on another thread when the process exits
  // must not read freed names (fuzz_api found this at exit).
  static const auto* n = new std::vector<std::string>{"cls_8",  "cls_16",  "cls_32",  "obj_8",
                                                      "obj_16", "obj_32",  "bbox_8",  "bbox_16",
                                                      "bbox_32", "kps_8",  "kps_16",  "kps_32"};
  return *n;
}

int YuNetAnchors(int index, cv::Size padded) {
  const int s = kStrides[index % 3];
  return (padded.width / s) * (padded.height / s);
}

int YuNetColumns(int index) {
  static const int cols[4] = {1, 1, 4, 10};
  return cols[index / 3];
}

cv::Size YuNetPaddedSize(cv::Size s) { return {(s.width + 31) / 32 * 32, (s.height + 31) / 32 * 32}; }

void YuNetBlob(const std::vector<cv::Mat>& images, cv::Size padded, cv::Mat& blob) {
  const int n = int(images.size());
  const int sz[4] = {n, 3, padded.height, padded.width};
  blob.create(4, sz, CV_32F);
  const size_t plane = size_t(padded.width) * padded.height;
  for (int b = 0; b < n; ++b) {
    const cv::Mat& im = images[b];
    float* c0 = blob.ptr<float>() + size_t(b) * 3 * plane;
    float* c1 = c0 + plane;
    float* c2 = c1 + plane;
    std::fill(c0, c0 + 3 * plane, 0.f);  // padding
    if (im.type() == CV_32FC3) CopyPlanes<float>(im, padded, c0, c1, c2);
    else CopyPlanes<uint8_t>(im, padded, c0, c1, c2);
  }
}

Detections YuNetDecode(const std::vector<cv::Mat>& outs, int b, cv::Size padded, cv::Size image,
                       float score_threshold, float nms_iou) {
  Detections dets;
  for (int i = 0; i < 3; ++i) {
    const int s = kStrides[i];
    const int cols = padded.width / s, rows = padded.height / s;
    const size_t n = static_cast<size_t>(cols) * rows;
    const float* cls = outs[i].ptr<float>() + b * n;
    const float* obj = outs[3 + i].ptr<float>() + b * n;
    const float* bbox = outs[6 + i].ptr<float>() + b * n * 4;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        const size_t idx = static_cast<size_t>(r) * cols + c;
        const float cs = std::clamp(cls[idx], 0.f, 1.f), os = std::clamp(obj[idx], 0.f, 1.f);
        const float score = std::sqrt(cs * os);
        if (score < score_threshold) continue;
        const float* bb = bbox + idx * 4;
        const float cx = (c + bb[0]) * s, cy = (r + bb[1]) * s;
        const float w = std::exp(bb[2]) * s, h = std::exp(bb[3]) * s;
        Box box{cx - w / 2, cy - h / 2, w, h};
        // Clip to the real image (padding is not part of it).
        const float x0 = std::clamp(box.x, 0.f, float(image.width)), y0 = std::clamp(box.y, 0.f, float(image.height));
        const float x1 = std::clamp(box.x2(), 0.f, float(image.width)), y1 = std::clamp(box.y2(), 0.f, float(image.height));
        if (x1 - x0 < 1 || y1 - y0 < 1) continue;
        dets.push_back({{x0, y0, x1 - x0, y1 - y0}, score});
      }
    }
  }
  return Nms(std::move(dets), nms_iou);
}

YuNetDetector::YuNetDetector(cv::dnn::Net net, float nms_iou, NetFactory make_net, std::unique_ptr<YuNetEngine> engine)
    : net_(std::move(net)), nms_(nms_iou), make_net_(std::move(make_net)), engine_(std::move(engine)) {}

YuNetDetector::~YuNetDetector() = default;

Result<cv::dnn::Net*> YuNetDetector::NetFor(int batch, cv::Size padded) {
  if (!make_net_) return &net_;
  const auto key = std::make_tuple(batch, padded.width, padded.height);
  if (auto it = nets_.find(key); it != nets_.end()) return &it->second;
  constexpr size_t kMaxShapes = 8;  // bounded: an odd mix of sizes cannot grow memory without end
  if (nets_.size() >= kMaxShapes) nets_.erase(nets_.begin());
  if (nets_.empty()) return &nets_.emplace(key, net_).first->second;  // the first shape uses the loaded network
  auto n = make_net_();
  if (!n) return n.status();
  return &nets_.emplace(key, std::move(*n)).first->second;
}

Result<std::vector<cv::Mat>> YuNetDetector::Run(const std::vector<cv::Mat>& images, cv::Size padded) {
  if (engine_) {
    std::vector<cv::Mat> outs(12);
    for (int k = 0; k < 12; ++k) {
      const int sz[3] = {int(images.size()), YuNetAnchors(k, padded), YuNetColumns(k)};
      outs[k].create(3, sz, CV_32F);
    }
    for (size_t b = 0; b < images.size(); ++b)
      if (Status s = engine_->Run(images[b], padded, outs, int(b)); !s) return s;
    return outs;
  }
  auto net = NetFor(int(images.size()), padded);
  if (!net) return net.status();
  YuNetBlob(images, padded, blob_);
  std::vector<cv::Mat> outs;
  try {
    (*net)->setInput(blob_);
    (*net)->forward(outs, YuNetOutputNames());
  } catch (const cv::Exception& e) {
    return Status::Error(std::string("yunet forward failed: ") + e.what());
  }
  if (outs.size() != 12) return Status::Error("yunet: unexpected output count");
  for (int k = 0; k < 12; ++k)
    if (outs[k].type() != CV_32F || !outs[k].isContinuous() ||
        outs[k].total() != size_t(YuNetAnchors(k, padded)) * YuNetColumns(k) * images.size())
      return Status::Error("yunet: output " + YuNetOutputNames()[k] + " does not match batch " +
                           std::to_string(images.size()));
  return outs;
}

Result<std::vector<std::vector<cv::Mat>>> YuNetDetector::Forward(const std::vector<cv::Mat>& images) {
  if (images.empty()) return std::vector<std::vector<cv::Mat>>{};
  for (const auto& im : images)
    if (im.empty() || (im.type() != CV_8UC3 && im.type() != CV_32FC3) || im.size() != images[0].size() ||
        im.type() != images[0].type())
      return Status::Error("yunet: images must be non-empty BGR (CV_8UC3 or CV_32FC3) of one size and type");
  const cv::Size padded = YuNetPaddedSize(images[0].size());
  auto outs = Run(images, padded);
  if (!outs) return outs.status();
  std::vector<std::vector<cv::Mat>> per_image(images.size());
  for (size_t b = 0; b < images.size(); ++b) {
    for (int k = 0; k < 12; ++k) {
      const int a = YuNetAnchors(k, padded), c = YuNetColumns(k);
      const int sz[3] = {1, a, c};
      cv::Mat m(3, sz, CV_32F);
      const float* src = (*outs)[k].ptr<float>() + b * size_t(a) * c;
      std::copy(src, src + size_t(a) * c, m.ptr<float>());
      per_image[b].push_back(std::move(m));
    }
  }
  return per_image;
}

Result<std::vector<Detections>> YuNetDetector::RunBatch(const std::vector<cv::Mat>& images, float score) {
  const cv::Size padded = YuNetPaddedSize(images[0].size());
  auto outs_r = Run(images, padded);
  if (!outs_r) return outs_r.status();
  const std::vector<cv::Mat>& outs = *outs_r;
  std::vector<Detections> res;
  for (size_t b = 0; b < images.size(); ++b)
    res.push_back(YuNetDecode(outs, int(b), padded, images[b].size(), score, nms_));
  return res;
}

}  // namespace veil
