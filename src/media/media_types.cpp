#include "media/media_types.h"

extern "C" {
#include <libavcodec/avcodec.h>
}

namespace veil {
PassthroughPacket::~PassthroughPacket() {
  if (pkt_) av_packet_free(&pkt_);
}
PassthroughPacket::PassthroughPacket(PassthroughPacket&& o) noexcept : pkt_(o.pkt_), stream_(o.stream_) {
  o.pkt_ = nullptr;
}
PassthroughPacket& PassthroughPacket::operator=(PassthroughPacket&& o) noexcept {
  if (this != &o) {
    if (pkt_) av_packet_free(&pkt_);
    pkt_ = o.pkt_;
    stream_ = o.stream_;
    o.pkt_ = nullptr;
  }
  return *this;
}
}  // namespace veil
