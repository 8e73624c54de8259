// Small helpers shared by the HTTP route files (control API, WHIP/WHEP).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace veil {

void Reply(httplib::Response& res, int status, const nlohmann::json& body);
// A JSON error body {"error": why}.
void Error(httplib::Response& res, int status, const std::string& why);
// Who asked: the peer address, plus a caller name the client may give
// (X-Veil-Caller, sanitized), for the audit trail.
std::string Caller(const httplib::Request& req);
bool TimingSafeEqual(const std::string& a, const std::string& b);
// True when `token` is empty or the request carries "Authorization: Bearer <token>".
bool BearerOk(const httplib::Request& req, const std::string& token);
// Security headers for the embedded pages (inline script and style, same-origin calls only).
void PageHeaders(httplib::Response& res);

}  // namespace veil
