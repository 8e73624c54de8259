#include "transport/gst_util.h"

#include <mutex>

namespace veil {

void EnsureGstInit() {
  static std::once_flag once;
  std::call_once(once, [] { gst_init(nullptr, nullptr); });
}

Result<GstPipeline> GstPipeline::Parse(const std::string& description) {
  EnsureGstInit();
  GError* err = nullptr;
  GstElement* p = gst_parse_launch(description.c_str(), &err);
  if (err) {
    const std::string msg = err->message;
    g_error_free(err);
    if (p) gst_object_unref(p);
    return Status::Error("gstreamer pipeline: " + msg);
  }
  if (!p) return Status::Error("gstreamer pipeline: cannot create");
  if (!GST_IS_PIPELINE(p)) {  // a single element comes back as itself
    GstElement* pipe = gst_pipeline_new(nullptr);
    gst_bin_add(GST_BIN(pipe), p);
    p = pipe;
  }
  return GstPipeline(p);
}

GstPipeline& GstPipeline::operator=(GstPipeline&& o) noexcept {
  if (this != &o) {
    Stop();
    if (p_) gst_object_unref(p_);
    p_ = o.p_;
    o.p_ = nullptr;
  }
  return *this;
}

GstPipeline::~GstPipeline() {
  Stop();
  if (p_) gst_object_unref(p_);
}

Status GstPipeline::Play() {
  if (gst_element_set_state(p_, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    std::string why = "cannot start pipeline";
    GstBus* bus = gst_element_get_bus(p_);
    if (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
      GError* e = nullptr;
      gst_message_parse_error(m, &e, nullptr);
      if (e) {
        why += std::string(": ") + e->message;
        g_error_free(e);
      }
      gst_message_unref(m);
    }
    gst_object_unref(bus);
    return Status::Error(why);
  }
  // Sockets are bound by now (NULL -> READY is synchronous). A pipeline
  // whose sink prerolls completes PLAYING on its first buffer: nothing to
  // wait for here (waiting cost every new session 2 s).
  return Status::Ok();
}

std::string GstPipeline::PollError() {
  if (!p_) return "";
  std::string why;
  GstBus* bus = gst_element_get_bus(p_);
  while (GstMessage* m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    GError* e = nullptr;
    gst_message_parse_error(m, &e, nullptr);
    if (e && why.empty()) why = std::string(GST_OBJECT_NAME(GST_MESSAGE_SRC(m))) + ": " + e->message;
    if (e) g_error_free(e);
    gst_message_unref(m);
  }
  gst_object_unref(bus);
  return why;
}

void GstPipeline::Stop() {
  if (p_) gst_element_set_state(p_, GST_STATE_NULL);
}

JitterBufferCounters ReadJitterBuffer(GstElement* jitterbuffer) {
  JitterBufferCounters c;
  GstStructure* st = nullptr;
  g_object_get(jitterbuffer, "stats", &st, nullptr);
  if (!st) return c;
  guint64 v = 0;
  if (gst_structure_get_uint64(st, "num-pushed", &v)) c.packets = v;
  if (gst_structure_get_uint64(st, "num-lost", &v)) c.lost = v;
  if (gst_structure_get_uint64(st, "num-late", &v)) c.late = v;
  if (gst_structure_get_uint64(st, "rtx-count", &v)) c.rtx_requests = v;
  if (gst_structure_get_uint64(st, "rtx-success-count", &v)) c.rtx_recovered = v;
  if (gst_structure_get_uint64(st, "avg-jitter", &v)) c.jitter_ms = double(v) / 1e6;
  gst_structure_free(st);
  return c;
}

}  // namespace veil
