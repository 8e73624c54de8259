// veil publish / veil view: the two ends of a plain RTP session, driven
// through the control API. Used by the demo and handy for trying a server.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include <fmt/format.h>

#include "client/api_client.h"
#include "cli/cmd_anonymize.h"
#include "cli/options.h"
#include "client/rtp_publisher.h"
#include "client/rtp_viewer.h"
#include "core/clock.h"

namespace veil::cli {
namespace {
using json = nlohmann::json;

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A human-readable account of what the viewer got and what the server did (stderr).
void PrintViewSummary(const ViewerCounters& c, double span_s, const json& st) {
  std::fprintf(stderr, "veil view: received %llu frames in %.1f s (%.1f fps), %llu keyframes, %llu audio packets, "
                       "%llu RTP packets lost\n",
               (unsigned long long)c.frames, span_s, span_s > 0 ? double(c.frames - 1) / span_s : 0.0,
               (unsigned long long)c.keyframes, (unsigned long long)c.audio_packets, (unsigned long long)c.rtp.lost);
  if (!st.is_object()) return;
  std::fprintf(stderr, "server: mode %s, received %.1f fps, sent %.1f fps, %d frames in, %d out, %d stale drops, "
                       "%d fail-closed frames, %d detections\n",
               st.value("mode", "").c_str(), st.value("received_fps", 0.0), st.value("sent_fps", 0.0),
               st.value("frames_received", 0), st.value("frames_sent", 0), st.value("stale_drops", 0),
               st.value("fail_closed_frames", 0), st.value("detections_run", 0));
  if (!st.contains("stages_ms")) return;
  std::fprintf(stderr, "  %-11s %8s %8s %8s\n", "stage", "mean ms", "p50 ms", "p99 ms");
  for (const char* k : {"queue_wait", "decode", "preprocess", "detect", "track", "mosaic", "encode", "send", "processing"}) {
    if (!st["stages_ms"].contains(k)) continue;
    const json& g = st["stages_ms"][k];
    std::fprintf(stderr, "  %-11s %8.2f %8.2f %8.2f\n", k, g.value("mean_ms", 0.0), g.value("p50_ms", 0.0),
                 g.value("p99_ms", 0.0));
  }
}

}  // namespace

void RegisterPublish(CLI::App& app, int* rc) {
  struct Opts {
    std::string server = "http://127.0.0.1:8080", input, session, mode, token;
    double seconds = 0;
    bool once = false, keep = false, attach = false, retry = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("publish", "Create a session and send a file to it as live RTP (paced, looping)");
  sub->add_option("--server", o->server, "veil serve URL")->capture_default_str();
  sub->add_option("-i,--input", o->input, "VP8 or H.264 file (IVF/WebM/MP4/MKV); Opus audio is sent too")->required();
  sub->add_option("--session", o->session, "Session id (default: the server picks one)");
  sub->add_option("--mode", o->mode, "Privacy mode for the session: anonymize | bypass | full_blur");
  sub->add_option("--seconds", o->seconds, "Stop after this long (default: until Ctrl-C, or the end with --once)")
      ->check(CLI::Range(0.0, 604800.0));
  sub->add_flag("--once", o->once, "Send the file once instead of looping");
  sub->add_flag("--keep", o->keep, "Leave the session on the server when done (it ends on the publisher timeout)");
  sub->add_flag("--attach", o->attach,
                "Send to the existing --session instead of creating one (a publisher or encoder restart); implies --keep");
  sub->add_option("--token", o->token, "Bearer token (or $VEIL_TOKEN)")->envname("VEIL_TOKEN");
  sub->add_flag("--retry", o->retry,
                "If the session's node goes away (killed, unreachable, or the session ended), create the session "
                "again through --server (a cluster places it on a live node), backing off 0.25 s to 4 s");
  sub->callback([o, rc] {
    InstallStopHandlers();
    auto clip = LoadClip(o->input);
    if (!clip) return Fail(rc, 2, clip.error());
    if (o->attach && o->session.empty()) return Fail(rc, 2, "--attach needs --session");
    if (o->attach) o->keep = true;  // the session is not this publisher's to end
    json req = {{"codec", (*clip)->info.video_codec}, {"audio", (*clip)->info.has_opus}};
    if (!o->session.empty()) req["id"] = o->session;
    if (!o->mode.empty()) req["mode"] = o->mode;
    double backoff_ms = 250;
    int attempt = 0;
    const double started = NowMs();
    for (;;) {
      ++attempt;
      // Each attempt starts at the entry URL: a 307 takes the client to the node that takes the session.
      auto api = ApiClient::Create(o->server, o->token);
      if (!api) return Fail(rc, 2, api.error());
      auto r = o->attach ? (*api)->Call("GET", "/v1/sessions/" + o->session) : (*api)->Call("POST", "/v1/sessions", req);
      std::string why;
      if (!r) why = r.error();
      else if (r->status != (o->attach ? 200 : 201))
        why = std::string(o->attach ? "cannot find" : "cannot create") + " the session: " + r->error();
      if (!why.empty()) {
        if (!o->retry || (attempt == 1 && r && r->status < 500)) return Fail(rc, 3, why);
        if (StopRequested()) return;
        std::fprintf(stderr, "veil publish: %s; again in %.2f s\n", why.c_str(), backoff_ms / 1000);
        Sleep(int(backoff_ms));
        backoff_ms = std::min(4000.0, backoff_ms * 2);
        continue;
      }
      backoff_ms = 250;
      if (o->attach && r->body.value("codec", "") != (*clip)->info.video_codec)
        return Fail(rc, 2, "session '" + o->session + "' takes " + r->body.value("codec", "?") + ", the file is " +
                               (*clip)->info.video_codec);
      const json s = r->body;
      const std::string id = s["id"];
      PublisherConfig pc;
      pc.host = s["ingest"]["host"];
      pc.video_port = s["ingest"]["video_port"];
      pc.audio_port = s["ingest"]["audio_port"];
      pc.loop = !o->once;
      pc.seconds = o->seconds > 0 ? std::max(0.1, o->seconds - (NowMs() - started) / 1000) : 0;
      auto pub = RtpPublisher::Start(*clip, pc);
      if (!pub) {
        if (!o->attach) (*api)->Call("DELETE", "/v1/sessions/" + id);
        return Fail(rc, 3, pub.error());
      }
      std::printf("%s\n", json({{"session", id}, {"video_port", pc.video_port}, {"audio_port", pc.audio_port},
                                {"codec", (*clip)->info.video_codec}, {"fps", (*clip)->info.fps},
                                {"server", (*api)->url()}, {"attempt", attempt}})
                              .dump()
                              .c_str());
      std::fflush(stdout);
      std::fprintf(stderr, "veil publish: sending %s to session %s (%s:%d) on %s\n", o->input.c_str(), id.c_str(),
                   pc.host.c_str(), pc.video_port, (*api)->url().c_str());
      // With --retry, the session is checked once a second: gone or unreachable -> publish it again.
      std::string lost;
      double next_check = NowMs() + 1000;
      while (!StopRequested() && !(*pub)->stats().finished) {
        Sleep(100);
        if (!o->retry || NowMs() < next_check) continue;
        next_check = NowMs() + 1000;
        auto g = (*api)->Call("GET", "/v1/sessions/" + id);
        if (!g) lost = g.error();
        else if (g->status == 404) lost = "the session ended on " + (*api)->url();
        if (!lost.empty()) break;
      }
      (*pub)->Stop();
      const PublisherStats st = (*pub)->stats();
      std::fprintf(stderr, "veil publish: sent %llu frames, %llu audio packets\n", (unsigned long long)st.frames,
                   (unsigned long long)st.audio_packets);
      if (!lost.empty() && !StopRequested()) {
        std::fprintf(stderr, "veil publish: %s; publishing again through %s\n", lost.c_str(), o->server.c_str());
        if (o->seconds > 0 && NowMs() - started >= o->seconds * 1000) return;
        continue;
      }
      if (!o->keep) {
        auto d = (*api)->Call("DELETE", "/v1/sessions/" + id);
        if (d && d->status != 204 && d->status != 404)
          std::fprintf(stderr, "veil publish: could not delete the session: %s\n", d->error().c_str());
      }
      return;
    }
  });
}

void RegisterView(CLI::App& app, int* rc) {
  struct Opts {
    std::string server = "http://127.0.0.1:8080", session, record, sdp, token;
    double seconds = 0, wait_s = 10, idle_s = 3;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("view", "Subscribe to a session as an RTP viewer and record what arrives");
  sub->add_option("--server", o->server, "veil serve URL")->capture_default_str();
  sub->add_option("--session", o->session, "Session id")->required();
  sub->add_option("--record", o->record, "Write the received video as is (VP8 -> .ivf, H.264 -> .h264)");
  sub->add_option("--sdp", o->sdp, "Also write the viewer SDP the server returned (for ffplay/VLC)");
  sub->add_option("--seconds", o->seconds, "Stop after this long (default: when the stream stops)")
      ->check(CLI::Range(0.0, 604800.0));
  sub->add_option("--wait", o->wait_s, "Wait this long for the session to appear, s")->check(CLI::Range(0.0, 600.0));
  sub->add_option("--idle-exit", o->idle_s, "Stop after this long without a frame, s")->check(CLI::Range(0.1, 3600.0));
  sub->add_option("--token", o->token, "Bearer token (or $VEIL_TOKEN)")->envname("VEIL_TOKEN");
  sub->callback([o, rc] {
    InstallStopHandlers();
    auto api = ApiClient::Create(o->server, o->token);
    if (!api) return Fail(rc, 2, api.error());
    // The codec decides the depayloader: ask the session (waiting for it to exist).
    json session;
    const double give_up = NowMs() + o->wait_s * 1000;
    for (;;) {
      auto r = (*api)->Call("GET", "/v1/sessions/" + o->session);
      if (!r) return Fail(rc, 3, r.error());
      if (r->status == 200) {
        session = r->body;
        break;
      }
      if (r->status != 404 || NowMs() > give_up || StopRequested()) return Fail(rc, 3, "no session: " + r->error());
      Sleep(200);
    }
    auto codec = ParseVideoCodec(session.value("codec", ""));
    if (!codec) return Fail(rc, 3, "session '" + o->session + "': " + codec.error());
    ViewerConfig vc;
    vc.codec = *codec;
    vc.record_path = o->record;
    vc.audio = session["ingest"]["audio_port"].get<int>() > 0;
    auto viewer = RtpViewer::Start(vc);
    if (!viewer) return Fail(rc, 3, viewer.error());
    json req = {{"host", "127.0.0.1"}, {"video_port", (*viewer)->video_port()}};
    if (vc.audio) req["audio_port"] = (*viewer)->audio_port();
    auto r = (*api)->Call("POST", "/v1/sessions/" + o->session + "/viewers", req);
    if (!r) return Fail(rc, 3, r.error());
    if (r->status != 201) return Fail(rc, 3, "cannot subscribe: " + r->error());
    const std::string vid = r->body["id"];
    if (!o->sdp.empty()) std::ofstream(o->sdp) << r->body["sdp"].get<std::string>();
    std::fprintf(stderr, "veil view: viewer %s of session %s on 127.0.0.1:%d\n", vid.c_str(), o->session.c_str(),
                 (*viewer)->video_port());
    const double start = NowMs();
    while (!StopRequested()) {
      Sleep(100);
      const ViewerCounters c = (*viewer)->counters();
      const double now = NowMs();
      if (o->seconds > 0 && now - start > o->seconds * 1000) break;
      const double last = c.last_ms > 0 ? c.last_ms : start;
      if (now - last > o->idle_s * 1000) break;
    }
    // The server's view of the session, for the summary (absent if it ended already).
    json server_stats;
    if (auto st = (*api)->Call("GET", "/v1/sessions/" + o->session + "/stats"); st && st->status == 200)
      server_stats = st->body;
    (*api)->Call("DELETE", "/v1/sessions/" + o->session + "/viewers/" + vid);  // gone already if the session ended
    const ViewerCounters c = (*viewer)->counters();
    viewer->reset();  // closes the recording
    const double span = c.last_ms > c.first_ms ? (c.last_ms - c.first_ms) / 1000.0 : 0;
    std::printf("%s\n", json({{"session", o->session},
                              {"frames", c.frames},
                              {"keyframes", c.keyframes},
                              {"fps", span > 0 ? double(c.frames - 1) / span : 0.0},
                              {"bytes", c.bytes},
                              {"audio_packets", c.audio_packets},
                              {"rtp_lost", c.rtp.lost},
                              {"record", o->record},
                              {"server", server_stats}})
                            .dump()
                            .c_str());
    PrintViewSummary(c, span, server_stats);
    if (c.frames == 0) Fail(rc, 4, "no video received");
  });
}

}  // namespace veil::cli
