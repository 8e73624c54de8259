#include "server/web_pages.h"

extern "C" const char veil_web_operator[];
extern "C" const char veil_web_operator_end[];
extern "C" const char veil_web_publish[];
extern "C" const char veil_web_publish_end[];
extern "C" const char veil_web_watch[];
extern "C" const char veil_web_watch_end[];
extern "C" const char veil_web_webrtc_js[];
extern "C" const char veil_web_webrtc_js_end[];

namespace veil {

std::string_view OperatorPage() { return {veil_web_operator, size_t(veil_web_operator_end - veil_web_operator)}; }
std::string_view PublishPage() { return {veil_web_publish, size_t(veil_web_publish_end - veil_web_publish)}; }
std::string_view WatchPage() { return {veil_web_watch, size_t(veil_web_watch_end - veil_web_watch)}; }
std::string_view WebRtcScript() {
  return {veil_web_webrtc_js, size_t(veil_web_webrtc_js_end - veil_web_webrtc_js)};
}

}  // namespace veil
