// A small JSON client for veil's control API (veil publish/view, load tool),
// and Ctrl-C handling for the client commands.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace httplib {
class Client;
}

namespace veil {

struct ApiReply {
  int status = 0;  // HTTP status
  nlohmann::json body;
  std::string error() const;  // the server's "error" field, or the status
};

class ApiClient {
 public:
  // url: http://HOST:PORT (loopback or any address the user gives).
  static Result<std::unique_ptr<ApiClient>> Create(const std::string& url, const std::string& token);
  ~ApiClient();
  // Transport failure (unreachable, timeout) is an error; HTTP errors come back in ApiReply.
  // A 307 to another node (a cluster's placement or the session's holder) is followed.
  Result<ApiReply> Call(const std::string& method, const std::string& path, const nlohmann::json& body = nullptr);
  // A GET whose body is text (e.g. /metrics); an HTTP error status is an error.
  Result<std::string> CallText(const std::string& method, const std::string& path);
  // The node this client talks to: the URL it was created with, or the node a 307 sent it to.
  const std::string& url() const { return url_; }

 private:
  ApiClient() = default;
  Status Connect(const std::string& url);
  std::unique_ptr<httplib::Client> http_;
  std::string url_, token_;
};

// Stops on SIGINT/SIGTERM: installs handlers that set a flag.
void InstallStopHandlers();
bool StopRequested();

}  // namespace veil
