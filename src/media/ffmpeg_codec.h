// Internal to src/media: FFmpeg encoder set-up and frame conversion shared by
// the file writer/reader and the in-memory codecs.
#pragma once
#include <string>

#include "core/frame.h"
#include "core/status.h"
#include "media/media_types.h"

extern "C" {
#include <libavcodec/avcodec.h>
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

// Points a non-refcounted AVFrame at `f`'s planes (the encoder copies what it keeps).
void WrapFrame(const Frame& f, AVFrame* a);

}  // namespace veil
