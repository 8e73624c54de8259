// YuNet 2023mar's forward pass in veil's own code (vision/yunet_kernels.h) instead of OpenCV
// 4.6's DNN module, which spends 2-5x the arithmetic's time on this small network's layers
// (16-64 channels: its 1x1 convolutions ran at 17-37 GFLOP/s here, the same ones channels-last
// at 84-99 in a standalone loop). The weights are read from the network OpenCV loaded, so the
// model file, its checksum and its resolution stay as they are; the graph (11 backbone blocks,
// a 3-level feature pyramid, 4 heads per level) is this model family's, and Create() refuses a
// network whose layers do not have its shapes or whose outputs differ from OpenCV's on a test
// image.
#pragma once
#include <memory>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

#include "core/status.h"
#include "vision/yunet_kernels.h"

namespace veil {

class YuNetEngine {
 public:
  // Reads the weights of `net` (a YuNet graph as readNetFromONNX returns it) and checks the
  // result against `net`'s own forward pass on a fixed test image (`tolerance`: the largest
  // difference of any output allowed).
  static Result<std::unique_ptr<YuNetEngine>> Create(cv::dnn::Net& net,
                                                     const YuNetKernels& k = YuNetKernelsFor(),
                                                     float tolerance = 1e-3f);

  // Runs `image` (CV_8UC3 or CV_32FC3, BGR 0..255, at most `padded`; zero padding right and
  // bottom) and writes its 12 outputs (YuNetOutputNames order, values as OpenCV's: cls and obj
  // after the sigmoid) as item `b` of `outs`, each [batch, anchors, columns] CV_32F.
  Status Run(const cv::Mat& image, cv::Size padded, std::vector<cv::Mat>& outs, int b);

  const char* isa() const { return k_.isa; }

 private:
  struct Block {
    int ci = 0, co = 0;
    std::vector<float> wpw, bpw, wdw, bdw;  // [ci][co], [co], [9][co], [co]
  };
  explicit YuNetEngine(const YuNetKernels& k) : k_(k) {}
  Status Load(cv::dnn::Net& net);
  Status RunBlock(const Block& b, const float* in, int h, int w, bool relu, float* out);

  const YuNetKernels& k_;
  std::vector<float> w0_, b0_;   // the first layer: [3][3][3][16], [16]
  std::vector<Block> backbone_;  // 11 blocks
  Block neck_[3];                // at strides 32, 16, 8
  Block heads_[3];  // strides 8, 16, 32: cls, obj, bbox (4), kps (10) as one 16-channel block
  // Scratch, grown to the largest input seen.
  std::vector<float> in_, a_, b_, s8_, s16_, s32_, n8_, n16_, n32_, head_, ring_;
};

}  // namespace veil
