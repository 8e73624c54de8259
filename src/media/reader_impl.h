// Internal to src/media: the FFmpeg state behind MediaReader (the writer
// reads the audio streams' parameters from it for pass-through).
#pragma once
#include <memory>

#include "core/frame.h"
#include "media/reader.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswscale/swscale.h>
}

namespace veil {

struct MediaReader::Impl {
  AVFormatContext* fmt = nullptr;
  AVCodecContext* dec = nullptr;
  AVPacket* pkt = nullptr;
  AVFrame* frame = nullptr;
  SwsContext* sws = nullptr;
  int video_stream = -1;
  std::shared_ptr<FramePool> pool;
  int64_t frame_duration = 1;  // in stream time base, for missing timestamps
  ~Impl() {
    sws_freeContext(sws);
    av_frame_free(&frame);
    av_packet_free(&pkt);
    avcodec_free_context(&dec);
    avformat_close_input(&fmt);
  }
};

}  // namespace veil
