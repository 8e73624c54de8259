// RTP payload types veil uses on plain RTP (dynamic range, RFC 3551).
#pragma once

namespace veil {
inline constexpr int kVideoPayloadType = 96;
inline constexpr int kOpusPayloadType = 111;
}  // namespace veil
