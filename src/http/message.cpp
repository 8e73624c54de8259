#include "http/message.h"

#include <algorithm>
#include <cctype>

namespace veil::http {

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

namespace {
const std::string* Find(const Fields& f, std::string_view name, bool no_case) {
  for (const auto& [k, v] : f)
    if (no_case ? EqualsNoCase(k, name) : k == name) return &v;
  return nullptr;
}
int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string Request::Header(std::string_view name) const {
  const std::string* v = Find(headers, name, true);
  return v ? *v : std::string();
}
bool Request::HasHeader(std::string_view name) const { return Find(headers, name, true) != nullptr; }
bool Request::HasParam(std::string_view name) const { return Find(params, name, false) != nullptr; }
std::string Request::Param(std::string_view name) const {
  const std::string* v = Find(params, name, false);
  return v ? *v : std::string();
}

void Response::SetHeader(std::string name, std::string value) {
  for (auto& [k, v] : headers)
    if (EqualsNoCase(k, name)) {
      v = std::move(value);
      return;
    }
  headers.emplace_back(std::move(name), std::move(value));
}
std::string Response::Header(std::string_view name) const {
  const std::string* v = Find(headers, name, true);
  return v ? *v : std::string();
}
void Response::SetContent(std::string content, std::string content_type) {
  body = std::move(content);
  SetHeader("Content-Type", std::move(content_type));
}
void Response::Redirect(const std::string& location, int s) {
  status = s;
  SetHeader("Location", location);
}

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && Hex(s[i + 1]) >= 0 && Hex(s[i + 2]) >= 0) {
      out += char(Hex(s[i + 1]) * 16 + Hex(s[i + 2]));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

Fields ParseQuery(std::string_view q) {
  Fields out;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    std::string_view part = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    out.emplace_back(PercentDecode(part.substr(0, eq), true),
                     eq == std::string_view::npos ? std::string() : PercentDecode(part.substr(eq + 1), true));
  }
  return out;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "";
  }
}

}  // namespace veil::http
