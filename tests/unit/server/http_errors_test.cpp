// The refusal kinds (core/status StatusCode) and the one place that turns them into HTTP.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/http_util.h"

namespace veil {
namespace {

TEST(HttpErrors, EveryCodeHasItsStatusAndOnlyUnavailableSaysRetry) {
  const struct {
    StatusCode code;
    int http;
    const char* name;
  } cases[] = {
      {StatusCode::kUnknown, 500, "unknown"},          {StatusCode::kInvalidArgument, 400, "invalid_argument"},
      {StatusCode::kForbidden, 403, "forbidden"},      {StatusCode::kNotFound, 404, "not_found"},
      {StatusCode::kConflict, 409, "conflict"},        {StatusCode::kUnsupported, 422, "unsupported"},
      {StatusCode::kUnavailable, 503, "unavailable"},  {StatusCode::kInternal, 500, "internal"},
  };
  for (const auto& c : cases) {
    http::Response res;
    Error(res, Status::Error(c.code, "why not"), 7);
    EXPECT_EQ(res.status, c.http) << c.name;
    const auto body = nlohmann::json::parse(res.body);
    EXPECT_EQ(body["error"], "why not");
    EXPECT_EQ(body["code"], c.name);
    EXPECT_EQ(res.Header("Retry-After"), c.code == StatusCode::kUnavailable ? "7" : "") << c.name;
  }
}

TEST(HttpErrors, AnErrorIsNeverOkAndAPlainErrorIsUnknown) {
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status().code(), StatusCode::kOk);
  const Status plain = Status::Error("boom");
  EXPECT_FALSE(plain.ok());
  EXPECT_EQ(plain.code(), StatusCode::kUnknown);
  // An error made with kOk or an empty message is still an error.
  EXPECT_FALSE(Status::Error(StatusCode::kOk, "x").ok());
  EXPECT_FALSE(Status::Error(StatusCode::kNotFound, "").ok());
  EXPECT_EQ(Status::Error(StatusCode::kNotFound, "").message(), "unknown error");
  // A Result keeps the code of the Status it was made from.
  Result<int> r = Status::Error(StatusCode::kConflict, "taken");
  EXPECT_EQ(r.status().code(), StatusCode::kConflict);
}

}  // namespace
}  // namespace veil
