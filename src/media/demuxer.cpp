#include "media/demuxer.h"

#include <algorithm>

#include "media/ffmpeg_util.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavcodec/bsf.h>
#include <libavformat/avformat.h>
}

namespace veil {

struct Demuxer::Impl {
  AVFormatContext* fmt = nullptr;
  AVBSFContext* bsf = nullptr;  // h264_mp4toannexb when needed
  AVPacket* pkt = nullptr;
  int video = -1, audio = -1;
  ~Impl() {
    av_bsf_free(&bsf);
    av_packet_free(&pkt);
    avformat_close_input(&fmt);
  }
};

Demuxer::~Demuxer() = default;

Result<std::unique_ptr<Demuxer>> Demuxer::Open(const std::string& path) {
  std::unique_ptr<Demuxer> d(new Demuxer());
  d->impl_ = std::make_unique<Impl>();
  Impl& m = *d->impl_;
  int err = OpenLocalInput(&m.fmt, path);
  if (err < 0) return Status::Error("cannot open " + path + ": " + AvError(err));
  if ((err = avformat_find_stream_info(m.fmt, nullptr)) < 0)
    return Status::Error("cannot read stream info of " + path + ": " + AvError(err));
  m.video = av_find_best_stream(m.fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  if (m.video < 0) return Status::Error(path + ": no video stream");
  AVStream* vs = m.fmt->streams[m.video];
  const AVCodecID id = vs->codecpar->codec_id;
  if (id != AV_CODEC_ID_VP8 && id != AV_CODEC_ID_H264)
    return Status::Error(path + ": video must be VP8 or H.264 to be sent as RTP, got " +
                         std::string(avcodec_get_name(id)));
  d->info_.video_codec = id == AV_CODEC_ID_VP8 ? "vp8" : "h264";
  d->info_.width = vs->codecpar->width;
  d->info_.height = vs->codecpar->height;
  const AVRational fr = av_guess_frame_rate(m.fmt, vs, nullptr);
  d->info_.fps = (fr.num > 0 && fr.den > 0) ? av_q2d(fr) : 30.0;
  if (!(d->info_.fps > 1 && d->info_.fps <= 240)) d->info_.fps = 30;
  for (unsigned i = 0; i < m.fmt->nb_streams; ++i)
    if (m.fmt->streams[i]->codecpar->codec_id == AV_CODEC_ID_OPUS) {
      m.audio = int(i);
      d->info_.has_opus = true;
      break;
    }
  if (id == AV_CODEC_ID_H264) {
    const AVBitStreamFilter* f = av_bsf_get_by_name("h264_mp4toannexb");
    if (!f || av_bsf_alloc(f, &m.bsf) < 0) return Status::Error("no h264_mp4toannexb filter");
    avcodec_parameters_copy(m.bsf->par_in, vs->codecpar);
    m.bsf->time_base_in = vs->time_base;
    if ((err = av_bsf_init(m.bsf)) < 0) return Status::Error("h264_mp4toannexb: " + AvError(err));
  }
  m.pkt = av_packet_alloc();
  return d;
}

Result<std::vector<DemuxedPacket>> Demuxer::ReadAll(size_t max_bytes) {
  Impl& m = *impl_;
  std::vector<DemuxedPacket> out;
  size_t bytes = 0;
  int64_t first_video = AV_NOPTS_VALUE, last_video = 0;
  const int64_t frame_us = int64_t(1e6 / info_.fps);
  auto add = [&](AVPacket* p, bool audio) -> Status {
    AVStream* st = m.fmt->streams[p->stream_index];
    int64_t ts = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
    if (ts == AV_NOPTS_VALUE) ts = 0;
    DemuxedPacket d;
    d.audio = audio;
    d.data.assign(p->data, p->data + p->size);
    d.pts_us = av_rescale_q(ts, st->time_base, AVRational{1, 1000000});
    d.keyframe = (p->flags & AV_PKT_FLAG_KEY) != 0;
    if (!audio) {
      if (first_video == AV_NOPTS_VALUE) first_video = d.pts_us;
      last_video = std::max(last_video, d.pts_us);
    }
    bytes += d.data.size();
    if (bytes > max_bytes) return Status::Error("file too large to send live (over " + std::to_string(max_bytes >> 20) + " MiB)");
    out.push_back(std::move(d));
    return Status::Ok();
  };
  for (;;) {
    const int err = av_read_frame(m.fmt, m.pkt);
    if (err == AVERROR_EOF) break;
    if (err < 0) return Status::Error("read error: " + AvError(err));
    const bool is_video = m.pkt->stream_index == m.video, is_audio = m.pkt->stream_index == m.audio;
    Status s;
    if (is_video && m.bsf) {
      if (av_bsf_send_packet(m.bsf, m.pkt) == 0)
        while (s.ok() && av_bsf_receive_packet(m.bsf, m.pkt) == 0) {
          m.pkt->stream_index = m.video;
          s = add(m.pkt, false);
          av_packet_unref(m.pkt);
        }
    } else if (is_video || is_audio) {
      s = add(m.pkt, is_audio);
    }
    av_packet_unref(m.pkt);
    if (!s) return s;
  }
  if (first_video == AV_NOPTS_VALUE) return Status::Error("no video packets");
  // Times from the first video frame; audio before it is dropped.
  std::vector<DemuxedPacket> rebased;
  rebased.reserve(out.size());
  for (auto& p : out) {
    p.pts_us -= first_video;
    if (p.pts_us >= 0) rebased.push_back(std::move(p));
  }
  // Decode order is kept (the container's); senders pace on pts_us.
  info_.duration_us = last_video - first_video + frame_us;
  auto first = std::find_if(rebased.begin(), rebased.end(), [](const DemuxedPacket& p) { return !p.audio; });
  if (first == rebased.end() || !first->keyframe) return Status::Error("the video does not start with a keyframe");
  return rebased;
}

}  // namespace veil
