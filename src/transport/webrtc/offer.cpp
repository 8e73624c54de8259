#include "transport/webrtc/offer.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

namespace veil {
namespace {

constexpr int kMaxCandidates = 8;  // kept per offer: each one is a target of the server's STUN checks

// Whether the server may send ICE connectivity checks to a candidate (fields of a=candidate:
// foundation component transport priority address port typ type ...). UDP only. Pinned to
// loopback: 127.0.0.1 only. Otherwise a unicast IPv4 address a remote peer can have (not
// loopback, unspecified, link-local, multicast or broadcast: an offer must not steer the
// server's checks at the host itself, cloud metadata services or whole segments) on an
// unprivileged port (>= 1024: not DNS, NTP or other services a check could be reflected off).
bool CandidateAllowed(const std::vector<std::string>& f, bool loopback_only) {
  if (f.size() < 8) return false;
  std::string transport = f[2];
  std::transform(transport.begin(), transport.end(), transport.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (transport != "udp") return false;
  if (loopback_only) return f[4] == "127.0.0.1";
  in_addr a{};
  if (inet_pton(AF_INET, f[4].c_str(), &a) != 1) return false;  // names (mDNS .local), IPv6
  const uint32_t ip = ntohl(a.s_addr);
  const uint8_t first = uint8_t(ip >> 24);
  if (first == 0 || first == 127 || first >= 224 || (ip >> 16) == 0xa9fe) return false;  // 0/8, 127/8, 224/3, 169.254/16
  int port = 0;
  const auto r = std::from_chars(f[5].data(), f[5].data() + f[5].size(), port);
  return r.ec == std::errc() && r.ptr == f[5].data() + f[5].size() && port >= 1024 && port <= 65535;
}

constexpr const char* kTwccUri = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01";

std::string Upper(std::string s) {
  for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string Lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool ToInt(const std::string& s, int lo, int hi, int* out) {
  int v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// "a=NAME:VALUE" -> NAME, VALUE (VALUE empty for flags like a=sendonly).
void Attribute(const std::string& line, std::string* name, std::string* value) {
  const std::string body = line.substr(2);
  const size_t colon = body.find(':');
  *name = colon == std::string::npos ? body : body.substr(0, colon);
  *value = colon == std::string::npos ? "" : body.substr(colon + 1);
}

std::string FmtpParam(const std::string& fmtp, const std::string& key) {
  for (const std::string& kv : Split(fmtp, ';')) {
    std::string t = kv;
    t.erase(0, t.find_first_not_of(' '));
    const size_t eq = t.find('=');
    if (eq != std::string::npos && Lower(t.substr(0, eq)) == key) return Lower(t.substr(eq + 1));
  }
  return "";
}

struct RawMedia {
  OfferMedia m;
  std::vector<std::pair<int, std::string>> fb;  // rtcp-fb pt (-1 = '*') -> type
  std::vector<int> formats;
  bool has_ufrag = false, has_pwd = false, has_fingerprint = false;
};

// The first codec in the offer's own order (the offerer's preference) that
// veil accepts; for H.264 only packetization-mode 1. Video: also which one (`codec`).
OfferCodec ChooseVideo(const RawMedia& r, const std::vector<VideoCodec>& accepted, VideoCodec* codec) {
  for (int pt : r.formats) {
    for (const OfferCodec& c : r.m.codecs) {
      if (c.pt != pt) continue;
      const std::optional<VideoCodec> id = VideoCodecFromSdp(c.name);
      if (!id || std::find(accepted.begin(), accepted.end(), *id) == accepted.end()) continue;
      if (*id == VideoCodec::kH264 && FmtpParam(c.fmtp, "packetization-mode") != "1") continue;  // single NAL: no 720p keyframe
      *codec = *id;
      return c;
    }
  }
  return {};
}

OfferCodec ChooseOpus(const RawMedia& r) {
  for (int pt : r.formats)
    for (const OfferCodec& c : r.m.codecs)
      if (c.pt == pt && Upper(c.name) == "OPUS") return c;
  return {};
}

}  // namespace

const OfferMedia* Offer::video() const {
  for (const OfferMedia& m : media)
    if (m.kind == "video") return &m;
  return nullptr;
}

const OfferMedia* Offer::audio() const {
  for (const OfferMedia& m : media)
    if (m.kind == "audio") return &m;
  return nullptr;
}

namespace {
Result<Offer> ParseOfferText(const std::string& text, const OfferRules& rules) {
  if (text.empty()) return Status::Error("empty SDP offer");
  std::vector<std::string> lines;
  {
    std::string cur;
    for (char c : text) {
      if (c == '\n') {
        if (!cur.empty() && cur.back() == '\r') cur.pop_back();
        lines.push_back(cur);
        cur.clear();
      } else if (c == '\0') {
        return Status::Error("SDP contains a NUL byte");
      } else {
        cur += c;
      }
    }
    if (!cur.empty()) lines.push_back(cur);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  if (lines.empty() || lines[0] != "v=0") return Status::Error("not an SDP offer: the first line must be v=0");
  if (lines.size() > 2000) return Status::Error("SDP has too many lines");

  Offer offer;
  std::vector<RawMedia> media;
  bool session_ufrag = false, session_pwd = false, session_fp = false, have_origin = false;
  std::ostringstream kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.size() < 2 || l[1] != '=' || !std::islower(static_cast<unsigned char>(l[0])))
      return Status::Error("SDP line " + std::to_string(i + 1) + " is not of the form x=value");
    bool keep = true;
    if (l[0] == 'o') have_origin = true;
    if (l[0] == 'm') {
      const std::vector<std::string> f = Split(l.substr(2), ' ');
      if (f.size() < 4) return Status::Error("SDP line " + std::to_string(i + 1) + ": malformed m= line");
      RawMedia r;
      r.m.kind = f[0];
      if (r.m.kind != "video" && r.m.kind != "audio")
        return Status::Error("only audio and video tracks are supported, the offer has m=" + r.m.kind);
      if (f[2].find("SAVPF") == std::string::npos)
        return Status::Error("m=" + r.m.kind + " must use UDP/TLS/RTP/SAVPF (DTLS-SRTP), got " + f[2]);
      for (size_t k = 3; k < f.size(); ++k) {
        int pt = 0;
        if (!ToInt(f[k], 0, 127, &pt)) return Status::Error("m=" + r.m.kind + ": payload type '" + f[k] + "' is not 0..127");
        r.formats.push_back(pt);
      }
      r.m.direction = "sendrecv";
      media.push_back(std::move(r));
    } else if (l[0] == 'a') {
      std::string name, value;
      Attribute(l, &name, &value);
      RawMedia* r = media.empty() ? nullptr : &media.back();
      if (name == "ice-ufrag") (r ? r->has_ufrag : session_ufrag) = !value.empty();
      else if (name == "ice-pwd") (r ? r->has_pwd : session_pwd) = !value.empty();
      else if (name == "fingerprint") (r ? r->has_fingerprint : session_fp) = !value.empty();
      else if (name == "candidate") {
        keep = offer.candidates_kept < kMaxCandidates && CandidateAllowed(Split(value, ' '), rules.loopback_only);
        ++(keep ? offer.candidates_kept : offer.candidates_dropped);
      } else if (r) {
        if (name == "mid") r->m.mid = value;
        else if (name == "sendrecv" || name == "sendonly" || name == "recvonly" || name == "inactive") r->m.direction = name;
        else if (name == "rtpmap") {
          const size_t sp = value.find(' ');
          OfferCodec c;
          if (sp == std::string::npos || !ToInt(value.substr(0, sp), 0, 127, &c.pt))
            return Status::Error("malformed a=rtpmap in m=" + r->m.kind);
          const std::vector<std::string> enc = Split(value.substr(sp + 1), '/');
          if (enc.size() < 2 || !ToInt(enc[1], 1, 1000000, &c.clock_rate))
            return Status::Error("malformed a=rtpmap in m=" + r->m.kind);
          c.name = Upper(enc[0]);
          r->m.codecs.push_back(c);
        } else if (name == "fmtp") {
          const size_t sp = value.find(' ');
          int pt = 0;
          if (sp == std::string::npos || !ToInt(value.substr(0, sp), 0, 127, &pt))
            return Status::Error("malformed a=fmtp in m=" + r->m.kind);
          for (OfferCodec& c : r->m.codecs)
            if (c.pt == pt) c.fmtp = value.substr(sp + 1);
        } else if (name == "rtcp-fb") {
          const size_t sp = value.find(' ');
          int pt = -1;
          if (sp == std::string::npos || (value.substr(0, sp) != "*" && !ToInt(value.substr(0, sp), 0, 127, &pt)))
            return Status::Error("malformed a=rtcp-fb in m=" + r->m.kind);
          r->fb.push_back({pt, value.substr(sp + 1)});
        } else if (name == "extmap") {
          const std::vector<std::string> f = Split(value, ' ');
          int id = 0;
          if (f.size() < 2 || !ToInt(f[0].substr(0, f[0].find('/')), 1, 255, &id))
            return Status::Error("malformed a=extmap in m=" + r->m.kind);
          if (f[1] == kTwccUri) r->m.twcc_ext = id;
        }
      }
    }
    if (keep) kept << l << "\r\n";
  }
  if (!have_origin) return Status::Error("SDP has no o= line");
  if (media.empty()) return Status::Error("the offer has no media (m=) section");
  int videos = 0, audios = 0;
  for (RawMedia& r : media) (r.m.kind == "video" ? videos : audios)++;
  if (videos != 1 || audios > 1) return Status::Error("the offer must have one video track and at most one audio track");
  for (RawMedia& r : media) {
    if (!(r.has_ufrag || session_ufrag) || !(r.has_pwd || session_pwd))
      return Status::Error("m=" + r.m.kind + " has no ICE credentials (a=ice-ufrag / a=ice-pwd)");
    if (!(r.has_fingerprint || session_fp)) return Status::Error("m=" + r.m.kind + " has no DTLS a=fingerprint");
    for (const OfferCodec& c : r.m.codecs)
      if (std::find(r.formats.begin(), r.formats.end(), c.pt) == r.formats.end())
        return Status::Error("a=rtpmap:" + std::to_string(c.pt) + " is not in the m=" + r.m.kind + " format list");
  }
  for (RawMedia& r : media) {
    const bool video = r.m.kind == "video";
    const std::string& d = r.m.direction;
    if (rules.role == OfferRole::kPublish && video && d != "sendonly" && d != "sendrecv")
      return Status::Error("a WHIP offer must send video (a=sendonly), its video is " + d);
    if (rules.role == OfferRole::kView && d != "recvonly" && d != "sendrecv")
      return Status::Error("a WHEP offer must receive (a=recvonly), its " + r.m.kind + " is " + d);
    r.m.chosen = video ? ChooseVideo(r, rules.video_codecs, &r.m.video_codec) : ChooseOpus(r);
    if (r.m.chosen.pt < 0) {
      std::string want;
      if (!video) want = "opus";
      if (video)
        for (VideoCodec c : rules.video_codecs) want += (want.empty() ? "" : " or ") + std::string(Name(c));
      return Status::Error(StatusCode::kUnsupported, "the offer's " + r.m.kind + " has no codec veil can use (needs " + want + ")");
    }
    for (const auto& [pt, type] : r.fb) {
      if (pt != -1 && pt != r.m.chosen.pt) continue;
      if (type == "nack") r.m.nack = true;
      if (type == "nack pli") r.m.pli = true;
      if (type == "transport-cc") r.m.transport_cc = true;
    }
    offer.media.push_back(r.m);
  }
  offer.sdp = kept.str();
  return offer;
}
}  // namespace

Result<Offer> ParseOffer(const std::string& text, const OfferRules& rules) {
  Result<Offer> r = ParseOfferText(text, rules);
  if (!r && r.status().code() == StatusCode::kUnknown)  // every other refusal: the offer is malformed
    return Status::Error(StatusCode::kInvalidArgument, r.error());
  return r;
}

std::string WithStartBitrate(const std::string& answer, int pt, int kbps) {
  const std::string param = "x-google-start-bitrate=" + std::to_string(kbps);
  const std::string fmtp = "a=fmtp:" + std::to_string(pt) + " ";
  const std::string rtpmap = "a=rtpmap:" + std::to_string(pt) + " ";
  std::istringstream in(answer);
  std::ostringstream out;
  std::string line;
  bool in_video = false, done = false;
  std::vector<std::string> lines;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("m=", 0) == 0) in_video = lines[i].rfind("m=video", 0) == 0;
    if (in_video && !done && lines[i].rfind(fmtp, 0) == 0) {
      lines[i] += ";" + param;
      done = true;
    }
  }
  if (!done) {  // no fmtp for it: add one after its rtpmap
    in_video = false;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].rfind("m=", 0) == 0) in_video = lines[i].rfind("m=video", 0) == 0;
      if (in_video && lines[i].rfind(rtpmap, 0) == 0) {
        lines.insert(lines.begin() + long(i) + 1, fmtp + param);
        break;
      }
    }
  }
  for (const std::string& l : lines) out << l << "\r\n";
  return out.str();
}

}  // namespace veil
