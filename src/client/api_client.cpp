#include "client/api_client.h"

#include <httplib.h>

#include <atomic>
#include <csignal>

namespace veil {
namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }
}  // namespace

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

bool StopRequested() { return g_stop.load(); }

std::string ApiReply::error() const {
  if (body.is_object() && body.contains("error") && body["error"].is_string())
    return "HTTP " + std::to_string(status) + ": " + body["error"].get<std::string>();
  return "HTTP " + std::to_string(status);
}

ApiClient::~ApiClient() = default;

Result<std::unique_ptr<ApiClient>> ApiClient::Create(const std::string& url, const std::string& token) {
  if (url.rfind("http://", 0) != 0)
    return Status::Error("server URL must look like http://HOST:PORT, got '" + url + "'");
  std::unique_ptr<ApiClient> c(new ApiClient());
  c->token_ = token;
  if (Status s = c->Connect(url); !s) return s;
  return c;
}

Status ApiClient::Connect(const std::string& url) {
  auto http = std::make_unique<httplib::Client>(url);
  if (!http->is_valid()) return Status::Error("invalid server URL '" + url + "'");
  http->set_connection_timeout(3, 0);
  http->set_read_timeout(10, 0);
  http->set_write_timeout(10, 0);
  http_ = std::move(http);
  url_ = url;
  return Status::Ok();
}

Result<ApiReply> ApiClient::Call(const std::string& method, const std::string& path, const nlohmann::json& body) {
  httplib::Headers h;
  if (!token_.empty()) h.emplace("Authorization", "Bearer " + token_);
  const std::string text = body.is_null() ? "" : body.dump();
  std::string target = path;
  for (int hop = 0;; ++hop) {
    httplib::Result r(nullptr, httplib::Error::Unknown);
    if (method == "GET") r = http_->Get(target.c_str(), h);
    else if (method == "POST") r = http_->Post(target.c_str(), h, text, "application/json");
    else if (method == "PUT") r = http_->Put(target.c_str(), h, text, "application/json");
    else if (method == "DELETE") r = http_->Delete(target.c_str(), h);
    else return Status::Error("unsupported method " + method);
    if (!r) return Status::Error("cannot reach " + url_ + " (" + httplib::to_string(r.error()) + ")");
    // A cluster node sends us to the node that takes (or holds) the session: from then on this
    // client talks to that node (the session's stats, viewers and DELETE are there).
    const std::string location = r->get_header_value("Location");
    if (r->status == 307 && hop < 3 && location.rfind("http://", 0) == 0) {
      const size_t slash = location.find('/', 7);
      const std::string base = location.substr(0, slash), rest = slash == std::string::npos ? "/" : location.substr(slash);
      if (Status s = Connect(base); !s) return s;
      target = rest;
      continue;
    }
    ApiReply a;
    a.status = r->status;
    a.body = nlohmann::json::parse(r->body, nullptr, false);
    if (a.body.is_discarded()) a.body = nullptr;
    return a;
  }
}

Result<std::string> ApiClient::CallText(const std::string& method, const std::string& path) {
  if (method != "GET") return Status::Error("CallText supports GET only");
  httplib::Headers h;
  if (!token_.empty()) h.emplace("Authorization", "Bearer " + token_);
  auto r = http_->Get(path.c_str(), h);
  if (!r) return Status::Error("cannot reach " + url_ + " (" + httplib::to_string(r.error()) + ")");
  if (r->status != 200) return Status::Error("GET " + path + ": HTTP " + std::to_string(r->status));
  return r->body;
}

}  // namespace veil
