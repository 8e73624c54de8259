#include "vision/yunet_engine.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "vision/yunet.h"

namespace veil {
namespace {

// ONNX node numbers of YuNet 2023mar's convolutions: each block is a 1x1 convolution and the
// 3x3 depthwise one after it.
constexpr int kBackbone[11][2] = {{2, 3},   {6, 7},   {9, 10},  {12, 13}, {15, 16}, {19, 20},
                                  {22, 23}, {26, 27}, {29, 30}, {33, 34}, {36, 37}};
constexpr int kBackboneChannels[11][2] = {{16, 16}, {16, 16}, {16, 32}, {32, 32},
                                          {32, 64}, {64, 64}, {64, 64}, {64, 64},
                                          {64, 64}, {64, 64}, {64, 64}};
constexpr int kNeck[3][2] = {{39, 40}, {45, 46}, {51, 52}};  // strides 32, 16, 8
// Heads per level (strides 8, 16, 32): cls, obj, bbox, kps, each (1x1 node, depthwise node).
constexpr int kHeadFirst[4] = {54, 66, 60, 72};  // 1, 1, 4 and 10 channels

Result<std::vector<cv::Mat>> Blobs(cv::dnn::Net& net, int node) {
  const std::string name = "onnx_node!Conv_" + std::to_string(node);
  const int id = net.getLayerId(name);
  if (id < 0) return Status::Error("yunet engine: the network has no layer " + name);
  auto layer = net.getLayer(id);
  if (!layer || layer->blobs.size() != 2)
    return Status::Error("yunet engine: " + name + " is not a convolution with bias");
  return layer->blobs;
}

// Checks that `w` is [co, ci, k, k] and `b` has co values.
bool Shaped(const std::vector<cv::Mat>& wb, int co, int ci, int k) {
  const cv::Mat& w = wb[0];
  return w.type() == CV_32F && w.isContinuous() && w.dims == 4 && w.size[0] == co &&
         w.size[1] == ci && w.size[2] == k && w.size[3] == k && wb[1].type() == CV_32F &&
         wb[1].isContinuous() && wb[1].total() == size_t(co);
}

}  // namespace

Status YuNetEngine::Load(cv::dnn::Net& net) {
  auto first = Blobs(net, 0);
  if (!first) return first.status();
  if (!Shaped(*first, 16, 3, 3)) return Status::Error("yunet engine: Conv_0 is not 3 -> 16, 3x3");
  w0_.assign(27 * 16, 0.f);
  for (int o = 0; o < 16; ++o)
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 3; ++x)
          w0_[((y * 3 + x) * 3 + c) * 16 + o] =
              (*first)[0].ptr<float>()[((o * 3 + c) * 3 + y) * 3 + x];
  b0_.assign((*first)[1].ptr<float>(), (*first)[1].ptr<float>() + 16);

  // A block from its two nodes; `parts` (heads only) stacks several blocks' outputs into one.
  auto block = [&](std::initializer_list<std::pair<int, int>> parts, int ci, Block& b) -> Status {
    int co = 0;
    for (auto [pw, dw] : parts) {
      auto p = Blobs(net, pw);
      if (!p) return p.status();
      co += (*p)[0].dims == 4 ? (*p)[0].size[0] : 0;
    }
    b.ci = ci;
    b.co = co;
    b.wpw.assign(size_t(ci) * co, 0.f);
    b.bpw.assign(co, 0.f);
    b.wdw.assign(size_t(9) * co, 0.f);
    b.bdw.assign(co, 0.f);
    int at = 0;
    for (auto [pw, dw] : parts) {
      auto p = Blobs(net, pw);
      auto d = Blobs(net, dw);
      if (!p) return p.status();
      if (!d) return d.status();
      const int n = (*p)[0].size[0];
      if (!Shaped(*p, n, ci, 1) || !Shaped(*d, n, 1, 3))
        return Status::Error("yunet engine: Conv_" + std::to_string(pw) + "/Conv_" +
                             std::to_string(dw) + " are not a " + std::to_string(ci) +
                             "-channel 1x1 and a depthwise 3x3");
      for (int o = 0; o < n; ++o) {
        for (int c = 0; c < ci; ++c)
          b.wpw[size_t(c) * co + at + o] = (*p)[0].ptr<float>()[size_t(o) * ci + c];
        b.bpw[at + o] = (*p)[1].ptr<float>()[o];
        for (int t = 0; t < 9; ++t)
          b.wdw[size_t(t) * co + at + o] = (*d)[0].ptr<float>()[size_t(o) * 9 + t];
        b.bdw[at + o] = (*d)[1].ptr<float>()[o];
      }
      at += n;
    }
    return Status::Ok();
  };
  backbone_.resize(11);
  for (int i = 0; i < 11; ++i) {
    if (Status s =
            block({{kBackbone[i][0], kBackbone[i][1]}}, kBackboneChannels[i][0], backbone_[i]);
        !s)
      return s;
    if (backbone_[i].co != kBackboneChannels[i][1])
      return Status::Error("yunet engine: unexpected backbone width");
  }
  for (int i = 0; i < 3; ++i) {
    if (Status s = block({{kNeck[i][0], kNeck[i][1]}}, 64, neck_[i]); !s) return s;
    if (neck_[i].co != 64) return Status::Error("yunet engine: unexpected neck width");
  }
  for (int l = 0; l < 3; ++l) {
    std::initializer_list<std::pair<int, int>> parts = {
        {kHeadFirst[0] + 2 * l, kHeadFirst[0] + 2 * l + 1},
        {kHeadFirst[1] + 2 * l, kHeadFirst[1] + 2 * l + 1},
        {kHeadFirst[2] + 2 * l, kHeadFirst[2] + 2 * l + 1},
        {kHeadFirst[3] + 2 * l, kHeadFirst[3] + 2 * l + 1}};
    if (Status s = block(parts, 64, heads_[l]); !s) return s;
    if (heads_[l].co != 16)
      return Status::Error("yunet engine: the heads are not 1 + 1 + 4 + 10 channels");
  }
  return Status::Ok();
}

Result<std::unique_ptr<YuNetEngine>> YuNetEngine::Create(cv::dnn::Net& net, const YuNetKernels& k,
                                                         float tolerance) {
  std::unique_ptr<YuNetEngine> e(new YuNetEngine(k));
  try {
    if (Status s = e->Load(net); !s) return s;
  } catch (const cv::Exception& ex) {
    return Status::Error(std::string("yunet engine: cannot read the network's weights: ") +
                         ex.what());
  }
  // The same test image through both: a wiring other than YuNet's would not match.
  cv::Mat img(64, 96, CV_8UC3);
  cv::RNG rng(20261203);
  rng.fill(img, cv::RNG::UNIFORM, 0, 256);
  const cv::Size padded = YuNetPaddedSize(img.size());
  std::vector<cv::Mat> want;
  try {
    cv::Mat blob;
    YuNetBlob({img}, padded, blob);
    net.setInput(blob);
    net.forward(want, YuNetOutputNames());
  } catch (const cv::Exception& ex) {
    return Status::Error(std::string("yunet engine: the reference forward pass failed: ") +
                         ex.what());
  }
  std::vector<cv::Mat> got(12);
  for (int i = 0; i < 12; ++i) {
    const int sz[3] = {1, YuNetAnchors(i, padded), YuNetColumns(i)};
    got[i].create(3, sz, CV_32F);
  }
  if (Status s = e->Run(img, padded, got, 0); !s) return s;
  for (int i = 0; i < 12; ++i) {
    if (want.size() != 12 || want[i].total() != got[i].total())
      return Status::Error("yunet engine: output " + YuNetOutputNames()[i] +
                           " has another shape than OpenCV's");
    const double d = cv::norm(want[i].reshape(1, 1), got[i].reshape(1, 1), cv::NORM_INF);
    if (!(d <= tolerance))
      return Status::Error("yunet engine: output " + YuNetOutputNames()[i] +
                           " differs from OpenCV's by " + std::to_string(d) +
                           " (this network is not wired as YuNet 2023mar)");
  }
  return e;
}

Status YuNetEngine::RunBlock(const Block& b, const float* in, int h, int w, bool relu, float* out) {
  if (!k_.pw_dw(in, h, w, b.ci, b.co, b.wpw.data(), b.bpw.data(), b.wdw.data(), b.bdw.data(), relu,
                out, ring_.data()))
    return Status::Error("yunet engine: no kernel for " + std::to_string(b.ci) + " -> " +
                         std::to_string(b.co));
  return Status::Ok();
}

Status YuNetEngine::Run(const cv::Mat& image, cv::Size padded, std::vector<cv::Mat>& outs, int b) {
  const int h = padded.height, w = padded.width;
  if (h <= 0 || w <= 0 || h % 32 || w % 32)
    return Status::Error("yunet engine: padded size must be a multiple of 32");
  if (image.empty() || (image.type() != CV_8UC3 && image.type() != CV_32FC3) || image.cols > w ||
      image.rows > h)
    return Status::Error(
        "yunet engine: the image must be BGR (CV_8UC3 or CV_32FC3) within the padded size");
  if (outs.size() != 12) return Status::Error("yunet engine: 12 outputs expected");
  for (int i = 0; i < 12; ++i)
    if (outs[i].type() != CV_32F || !outs[i].isContinuous() || outs[i].dims != 3 || b < 0 ||
        b >= outs[i].size[0] || outs[i].size[1] != YuNetAnchors(i, padded) ||
        outs[i].size[2] != YuNetColumns(i))
      return Status::Error("yunet engine: output " + YuNetOutputNames()[i] +
                           " has the wrong shape");

  // The input with a 1-pixel zero border, channels last.
  // Only the padding is zeroed: the image's pixels are all written.
  const size_t stride = size_t(w + 2) * 3;
  in_.resize(size_t(h + 2) * stride);
  std::fill(in_.begin(), in_.begin() + stride, 0.f);
  for (int y = 0; y < h + 1; ++y) {
    float* row = in_.data() + size_t(y + 1) * stride;
    size_t filled = 3;
    row[0] = row[1] = row[2] = 0.f;
    if (y < image.rows) {
      if (image.type() == CV_8UC3) {
        const uint8_t* p = image.ptr<uint8_t>(y);
        for (int i = 0; i < image.cols * 3; ++i) row[3 + i] = float(p[i]);
      } else {
        const float* p = image.ptr<float>(y);
        std::copy(p, p + image.cols * 3, row + 3);
      }
      filled += size_t(image.cols) * 3;
    }
    std::fill(row + filled, row + stride, 0.f);
  }
  const size_t big = size_t(h / 2) * (w / 2) * 16;  // the largest tensor (= (h/4)(w/4)x64)
  a_.resize(big);
  b_.resize(big);
  s8_.resize(size_t(h / 8) * (w / 8) * 64);
  n8_.resize(s8_.size());
  s16_.resize(size_t(h / 16) * (w / 16) * 64);
  n16_.resize(s16_.size());
  s32_.resize(size_t(h / 32) * (w / 32) * 64);
  n32_.resize(s32_.size());
  head_.resize(size_t(h / 8) * (w / 8) * 16);
  ring_.resize(size_t(4) * (w / 2 + 2) * 64);

  float *A = a_.data(), *B = b_.data();
  int ch = h / 2, cw = w / 2;
  k_.conv0(in_.data(), h, w, w0_.data(), b0_.data(), A);
  auto blk = [&](int i, float* from, float* to) {
    return RunBlock(backbone_[i], from, ch, cw, true, to);
  };
  auto pool = [&](float* from, int c, float* to) {
    k_.max_pool(from, ch, cw, c, to);
    ch /= 2;
    cw /= 2;
  };
  Status s;
  if (!(s = blk(0, A, B))) return s;
  pool(B, 16, A);  // stride 4
  if (!(s = blk(1, A, B)) || !(s = blk(2, B, A)) || !(s = blk(3, A, B)) || !(s = blk(4, B, A)))
    return s;
  pool(A, 64, B);  // stride 8
  if (!(s = blk(5, B, A)) || !(s = blk(6, A, s8_.data()))) return s;
  pool(s8_.data(), 64, B);  // stride 16
  if (!(s = blk(7, B, A)) || !(s = blk(8, A, s16_.data()))) return s;
  pool(s16_.data(), 64, B);  // stride 32
  if (!(s = blk(9, B, A)) || !(s = blk(10, A, s32_.data()))) return s;
  // The feature pyramid, top down.
  if (!(s = RunBlock(neck_[0], s32_.data(), h / 32, w / 32, true, n32_.data()))) return s;
  k_.up_add(n32_.data(), s16_.data(), h / 16, w / 16, 64, A);
  if (!(s = RunBlock(neck_[1], A, h / 16, w / 16, true, n16_.data()))) return s;
  k_.up_add(n16_.data(), s8_.data(), h / 8, w / 8, 64, A);
  if (!(s = RunBlock(neck_[2], A, h / 8, w / 8, true, n8_.data()))) return s;

  const float* feats[3] = {n8_.data(), n16_.data(), n32_.data()};
  for (int l = 0; l < 3; ++l) {
    const int st = 8 << l;
    if (!(s = RunBlock(heads_[l], feats[l], h / st, w / st, false, head_.data()))) return s;
    const int n = YuNetAnchors(l, padded);
    float* cls = outs[l].ptr<float>() + size_t(b) * n;
    float* obj = outs[3 + l].ptr<float>() + size_t(b) * n;
    float* box = outs[6 + l].ptr<float>() + size_t(b) * n * 4;
    float* kps = outs[9 + l].ptr<float>() + size_t(b) * n * 10;
    for (int i = 0; i < n; ++i) {
      const float* p = head_.data() + size_t(i) * 16;
      cls[i] = 1.f / (1.f + std::exp(-p[0]));
      obj[i] = 1.f / (1.f + std::exp(-p[1]));
      std::copy(p + 2, p + 6, box + size_t(i) * 4);
      std::copy(p + 6, p + 16, kps + size_t(i) * 10);
    }
  }
  return Status::Ok();
}

}  // namespace veil
