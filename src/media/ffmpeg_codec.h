// Internal to src/media: FFmpeg encoder set-up and frame conversion shared by
// the file writer/reader and the in-memory codecs.
#pragma once
#include <string>

#include "core/frame.h"
#include "core/status.h"
#include "media/media_types.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/buffer.h>
#include <libswscale/swscale.h>
}

namespace veil {

// Validates the options and opens an encoder for `codec` (vp8 | h264 | rawvideo).
// global_header: parameter sets out of band (MP4/MKV); false = in band (RTP).
Result<AVCodecContext*> OpenVideoEncoder(const std::string& codec, const VideoInfo& vi, const EncoderOptions& o,
                                         bool global_header);

// Copies (or converts/scales) a decoded AVFrame into a frame from `pool`.
// Returns null when the conversion is impossible.
FramePtr ToPooledFrame(const AVFrame* a, FramePool& pool, SwsContext** sws);

// Frames for avcodec_send_frame, copied into refcounted buffers from a pool of this encoder's
// own. A frame that only points at our planes (no buffer) is copied by FFmpeg into a buffer
// allocated for that frame alone (av_frame_ref): with `veil serve`'s fixed mmap threshold
// (cli/service.cpp) a fresh 1.4 MB mapping per 720p frame, every page faulted in on every frame,
// and x264's encode took 1.4x as long (docs/figures.md "x264's input frames from a pool").
class EncoderInput {
 public:
  EncoderInput() = default;
  EncoderInput(const EncoderInput&) = delete;
  EncoderInput& operator=(const EncoderInput&) = delete;
  ~EncoderInput();
  // Points `a` (unreferenced) at a pooled copy of f's planes, with f's size and pts; after
  // avcodec_send_frame the caller av_frame_unref's it, and the buffer goes back to the pool once
  // the encoder lets it go.
  Status Fill(const Frame& f, AVFrame* a);

 private:
  AVBufferPool* pool_ = nullptr;
  int width_ = 0, height_ = 0;
  int stride_[3] = {};
  size_t offset_[3] = {};
};

}  // namespace veil
