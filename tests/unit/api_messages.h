// What the tests of the API's typed messages (common/api/) share: the
// round trips of unit/common/api_*_test.cpp, the printers' tests of hostctl.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "common/api/json_codec.h"

namespace ds::api::test {

// `message` encoded and decoded again; fails the test when it does not decode.
template <DecodableMessage T>
T round_trip(const T& message) {
    auto decoded = decode<T>(to_json(message));
    INFO((decoded.ok() ? std::string() : decoded.error().message));
    REQUIRE(decoded.ok());
    return decoded.value();
}

// `json` decoded as T; fails the test when it does not decode.
template <DecodableMessage T>
T decoded(const Json& json) {
    auto message = decode<T>(json);
    INFO((message.ok() ? std::string() : message.error().message));
    REQUIRE(message.ok());
    return message.value();
}

// Why `json` does not decode as T: errc::kProtocol's message.
template <DecodableMessage T>
std::string decode_error(const Json& json) {
    auto message = decode<T>(json);
    REQUIRE_FALSE(message.ok());
    CHECK(message.error().code == errc::kProtocol);
    return message.error().message;
}

}  // namespace ds::api::test
