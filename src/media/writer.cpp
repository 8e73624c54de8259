#include "media/writer.h"

#include <algorithm>
#include <map>

#include "media/ffmpeg_codec.h"
#include "media/ffmpeg_util.h"
#include "media/reader_impl.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

namespace veil {

struct MediaWriter::Impl {
  AVFormatContext* fmt = nullptr;
  AVCodecContext* enc = nullptr;
  AVStream* vst = nullptr;
  AVFrame* frame = nullptr;
  EncoderInput input;
  AVPacket* pkt = nullptr;
  std::map<int, std::pair<AVStream*, AVRational>> audio;  // source index -> (out stream, source tb)
  bool header_written = false;
  ~Impl() {
    av_packet_free(&pkt);
    av_frame_free(&frame);
    avcodec_free_context(&enc);
    if (fmt && !(fmt->oformat->flags & AVFMT_NOFILE)) avio_closep(&fmt->pb);
    avformat_free_context(fmt);
  }
};

Result<std::string> CodecForPath(const std::string& path) {
  const auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  if (ext == "ivf" || ext == "webm") return std::string("vp8");
  if (ext == "mp4" || ext == "mkv" || ext == "mov") return std::string("h264");
  if (ext == "y4m") return std::string("rawvideo");
  return Status::Error("cannot tell the output format from '" + path +
                       "': use .ivf/.webm (VP8), .mp4/.mkv (H.264) or .y4m");
}

MediaWriter::~MediaWriter() {
  if (!finished_ && impl_ && impl_->header_written) Finish();
}

int64_t MediaWriter::bytes_written() const {
  if (finished_) return bytes_;
  return (impl_ && impl_->fmt && impl_->fmt->pb) ? avio_tell(impl_->fmt->pb) : 0;
}

Result<std::unique_ptr<MediaWriter>> MediaWriter::Open(const std::string& path, const VideoInfo& vi,
                                                       const EncoderOptions& o, const MediaReader* audio_from) {
  std::string codec = o.codec;
  if (codec.empty()) {
    auto c = CodecForPath(path);
    if (!c) return c.status();
    codec = *c;
  }
  std::unique_ptr<MediaWriter> w(new MediaWriter());
  w->codec_ = codec;
  w->impl_ = std::make_unique<Impl>();
  Impl& m = *w->impl_;
  int err = avformat_alloc_output_context2(&m.fmt, nullptr, nullptr, path.c_str());
  if (err < 0 || !m.fmt) return Status::Error("cannot create output " + path + ": " + AvError(err));

  auto enc = OpenVideoEncoder(codec, vi, o, m.fmt->oformat->flags & AVFMT_GLOBALHEADER);
  if (!enc) return enc.status();
  m.enc = *enc;
  if (avformat_query_codec(m.fmt->oformat, m.enc->codec_id, FF_COMPLIANCE_NORMAL) != 1)
    return Status::Error("container of " + path + " cannot hold " + codec);
  m.vst = avformat_new_stream(m.fmt, nullptr);
  avcodec_parameters_from_context(m.vst->codecpar, m.enc);
  m.vst->time_base = m.enc->time_base;
  m.vst->avg_frame_rate = m.enc->framerate;

  if (audio_from) {
    AVFormatContext* in = audio_from->impl_->fmt;
    for (unsigned i = 0; i < in->nb_streams; ++i) {
      const AVStream* ist = in->streams[i];
      if (ist->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) continue;
      if (avformat_query_codec(m.fmt->oformat, ist->codecpar->codec_id, FF_COMPLIANCE_NORMAL) != 1) {
        ++w->audio_skipped_;
        continue;
      }
      AVStream* ost = avformat_new_stream(m.fmt, nullptr);
      avcodec_parameters_copy(ost->codecpar, ist->codecpar);
      ost->codecpar->codec_tag = 0;
      ost->time_base = ist->time_base;
      m.audio[int(i)] = {ost, ist->time_base};
      ++w->audio_copied_;
    }
  }
  if (!(m.fmt->oformat->flags & AVFMT_NOFILE) && (err = avio_open(&m.fmt->pb, path.c_str(), AVIO_FLAG_WRITE)) < 0)
    return Status::Error("cannot write " + path + ": " + AvError(err));
  if ((err = avformat_write_header(m.fmt, nullptr)) < 0)
    return Status::Error("cannot write header of " + path + ": " + AvError(err));
  m.header_written = true;
  m.frame = av_frame_alloc();
  m.pkt = av_packet_alloc();
  return w;
}

Status MediaWriter::Drain(bool flush) {
  Impl& m = *impl_;
  for (;;) {
    const int err = avcodec_receive_packet(m.enc, m.pkt);
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return Status::Ok();
    if (err < 0) return Status::Error("encoder error: " + AvError(err));
    av_packet_rescale_ts(m.pkt, m.enc->time_base, m.vst->time_base);
    m.pkt->stream_index = m.vst->index;
    const int w = av_interleaved_write_frame(m.fmt, m.pkt);
    if (w < 0) return Status::Error("write error: " + AvError(w));
  }
}

Status MediaWriter::WriteFrame(const Frame& f) {
  if (finished_) return Status::Error("writer already finished");
  Impl& m = *impl_;
  if (f.width != m.enc->width || f.height != m.enc->height) return Status::Error("frame size differs from stream");
  AVFrame* a = m.frame;
  // A pooled copy: the encoder keeps a reference, so `f` may be reused at once.
  if (Status s = m.input.Fill(f, a); !s) return s;
  const int err = avcodec_send_frame(m.enc, a);
  av_frame_unref(a);
  if (err < 0) return Status::Error("encoder rejected frame: " + AvError(err));
  return Drain(false);
}

Status MediaWriter::WritePassthrough(const PassthroughPacket& p) {
  if (finished_) return Status::Error("writer already finished");
  Impl& m = *impl_;
  auto it = m.audio.find(p.source_stream());
  if (it == m.audio.end()) return Status::Ok();  // stream not copied (reported at open)
  AVPacket* out = av_packet_clone(p.get());
  if (!out) return Status::Error("out of memory");
  av_packet_rescale_ts(out, it->second.second, it->second.first->time_base);
  out->stream_index = it->second.first->index;
  out->pos = -1;
  const int err = av_interleaved_write_frame(m.fmt, out);
  av_packet_free(&out);
  return err < 0 ? Status::Error("audio write error: " + AvError(err)) : Status::Ok();
}

Status MediaWriter::Finish() {
  if (finished_) return Status::Ok();
  finished_ = true;
  Impl& m = *impl_;
  Status s;
  if (avcodec_send_frame(m.enc, nullptr) >= 0) s = Drain(true);
  const int err = av_write_trailer(m.fmt);
  if (m.fmt->pb) bytes_ = avio_tell(m.fmt->pb);
  if (!(m.fmt->oformat->flags & AVFMT_NOFILE)) avio_closep(&m.fmt->pb);
  if (err < 0 && s.ok()) s = Status::Error("cannot finish output: " + AvError(err));
  return s;
}

}  // namespace veil
