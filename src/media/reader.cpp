#include "media/reader.h"

#include <cstring>

#include "media/ffmpeg_codec.h"
#include "media/ffmpeg_util.h"
#include "media/reader_impl.h"


namespace veil {


MediaReader::~MediaReader() = default;

Result<std::unique_ptr<MediaReader>> MediaReader::Open(const std::string& path, const ReaderOptions& o) {
  if (Status s = ValidateDecoderThreads(o.decoder_threads); !s) return s;
  std::unique_ptr<MediaReader> r(new MediaReader());
  r->max_corrupt_ = o.max_corrupt_packets;
  r->impl_ = std::make_unique<Impl>();
  Impl& m = *r->impl_;
  int err = OpenLocalInput(&m.fmt, path);
  if (err < 0) return Status::Error("cannot open " + path + ": " + AvError(err));
  if ((err = avformat_find_stream_info(m.fmt, nullptr)) < 0)
    return Status::Error("cannot read stream info of " + path + ": " + AvError(err));
  const AVCodec* codec = nullptr;
  m.video_stream = av_find_best_stream(m.fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
  if (m.video_stream < 0 || !codec) return Status::Error(path + ": no decodable video stream");
  AVStream* st = m.fmt->streams[m.video_stream];
  if (st->codecpar->width <= 0 || st->codecpar->height <= 0 || st->codecpar->width > 8192 ||
      st->codecpar->height > 8192)
    return Status::Error(path + ": unsupported video size " + std::to_string(st->codecpar->width) + "x" +
                         std::to_string(st->codecpar->height));
  m.dec = avcodec_alloc_context3(codec);
  avcodec_parameters_to_context(m.dec, st->codecpar);
  m.dec->thread_count = o.decoder_threads;
  m.dec->max_pixels = kMaxFilePixels;
  if ((err = avcodec_open2(m.dec, codec, nullptr)) < 0)
    return Status::Error("cannot open " + std::string(codec->name) + " decoder: " + AvError(err));
  m.pkt = av_packet_alloc();
  m.frame = av_frame_alloc();

  VideoInfo& vi = r->info_;
  vi.width = st->codecpar->width;
  vi.height = st->codecpar->height;
  vi.tb_num = st->time_base.num;
  vi.tb_den = st->time_base.den;
  AVRational fr = av_guess_frame_rate(m.fmt, st, nullptr);
  vi.fps = (fr.num > 0 && fr.den > 0) ? av_q2d(fr) : 30.0;
  vi.codec = codec->name;
  vi.frames_estimate = st->nb_frames > 0 ? st->nb_frames
                       : (m.fmt->duration > 0 ? int64_t(m.fmt->duration / 1e6 * vi.fps) : 0);
  for (unsigned i = 0; i < m.fmt->nb_streams; ++i)
    if (m.fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) ++vi.audio_streams;
  m.frame_duration = std::max<int64_t>(1, av_rescale_q(1, av_inv_q(fr.num > 0 ? fr : AVRational{30, 1}), st->time_base));
  m.pool = FramePool::Create(vi.width, vi.height, o.max_pooled_frames);
  return r;
}

std::optional<FramePtr> MediaReader::ReceiveFrame() {
  Impl& m = *impl_;
  const int err = avcodec_receive_frame(m.dec, m.frame);
  if (err < 0) {
    if (err != AVERROR(EAGAIN) && err != AVERROR_EOF) ++corrupt_packets_;
    return std::nullopt;
  }
  const AVFrame* a = m.frame;
  FramePtr f = ToPooledFrame(a, *m.pool, &m.sws);
  if (!f) {
    ++corrupt_packets_;
    av_frame_unref(m.frame);
    return std::nullopt;
  }
  f->pts = a->best_effort_timestamp != AV_NOPTS_VALUE ? a->best_effort_timestamp : frames_ * m.frame_duration;
  f->index = frames_++;
  av_frame_unref(m.frame);
  return f;
}

ReadItem MediaReader::Next() {
  Impl& m = *impl_;
  while (!done_) {
    if (auto f = ReceiveFrame()) return std::move(*f);
    if (draining_) {
      done_ = true;
      break;
    }
    if (corrupt_packets_ > max_corrupt_) {
      end_status_ = Status::Error("input is corrupt: " + std::to_string(corrupt_packets_) +
                                  " undecodable packets, giving up");
      done_ = true;
      break;
    }
    const int err = av_read_frame(m.fmt, m.pkt);
    if (err < 0) {
      if (err != AVERROR_EOF) {
        end_status_ = Status::Error("input read error after " + std::to_string(frames_) +
                                    " frames: " + AvError(err));
      }
      avcodec_send_packet(m.dec, nullptr);  // flush buffered frames
      draining_ = true;
      continue;
    }
    if (m.pkt->stream_index == m.video_stream) {
      if (m.pkt->flags & AV_PKT_FLAG_CORRUPT) ++corrupt_packets_;
      const int s = avcodec_send_packet(m.dec, m.pkt);
      if (s < 0 && s != AVERROR(EAGAIN)) ++corrupt_packets_;
      av_packet_unref(m.pkt);
      continue;
    }
    if (m.fmt->streams[m.pkt->stream_index]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
      AVPacket* copy = av_packet_alloc();
      av_packet_move_ref(copy, m.pkt);
      return PassthroughPacket(copy, copy->stream_index);
    }
    av_packet_unref(m.pkt);
  }
  if (end_status_.ok() && corrupt_packets_ > 0)
    end_status_ = Status::Error("input is damaged: " + std::to_string(corrupt_packets_) +
                                " packets could not be decoded (" + std::to_string(frames_) +
                                " frames recovered)");
  return EndOfStream{};
}

}  // namespace veil
