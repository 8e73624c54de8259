// HTTP requests and responses as the route handlers see them: plain values,
// independent of the server library underneath (http/server.h).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace veil::http {

using Fields = std::vector<std::pair<std::string, std::string>>;

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path plus query
  std::string path;    // the target up to '?', not decoded
  Fields params;       // the query, percent-decoded ('+' is a space)
  Fields headers;      // in the order sent
  std::string body;
  std::string remote_addr;
  int remote_port = 0;
  std::vector<std::string> matches;  // the route's regex groups; [0] is the whole path

  // The first header of this name (case-insensitive), or "" when there is none.
  std::string Header(std::string_view name) const;
  bool HasHeader(std::string_view name) const;
  bool HasParam(std::string_view name) const;
  std::string Param(std::string_view name) const;  // the first value, or ""
};

struct Response {
  int status = 200;
  Fields headers;
  std::string body;

  // Sets a header, replacing one of the same name (case-insensitive).
  void SetHeader(std::string name, std::string value);
  std::string Header(std::string_view name) const;
  void SetContent(std::string content, std::string content_type);
  void Redirect(const std::string& location, int status = 302);
};

using Handler = std::function<void(const Request&, Response&)>;

bool EqualsNoCase(std::string_view a, std::string_view b);
// Splits "a=1&b=x%20y" into decoded pairs. Malformed escapes are kept as they are.
Fields ParseQuery(std::string_view query);
std::string PercentDecode(std::string_view s, bool plus_is_space);
// The standard reason phrase ("Not Found"), or "" for an unknown status.
const char* ReasonPhrase(int status);

}  // namespace veil::http
