#include "common/json_shape.h"

#include <array>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

using namespace ds;
using namespace ds::json_shape;

namespace {

constexpr ErrorForm kPathForm{errc::kProtocol, "msg", Wording::kPath};
constexpr ErrorForm kFieldForm{errc::kProtocol, "agent/call", Wording::kField};

// {"v": value} checked against one optional field "v" of `shape`: the error's
// message, or "" when accepted.
std::string refusal(const Shape& shape, Json value, const ErrorForm& form = kPathForm) {
    const std::array fields = {Field{"v", shape}};
    Json object = {{"v", std::move(value)}};
    auto checked = check_object(object, fields, form);
    return checked.ok() ? "" : checked.error().message;
}

struct Case {
    Shape shape;
    std::vector<Json> accepted;
    std::vector<std::pair<Json, std::string>> refused;  // the value, the message
};

}  // namespace

TEST_CASE("json_shape: each shape accepts its values and names what is wrong with others",
          "[json_shape]") {
    const std::vector<Case> cases = {
        {string(3),
         {"", "abc"},
         {{7, "msg.v: expected a string, got number"},
          {"abcd", "msg.v: a string of 4 bytes, longer than the limit of 3"}}},
        {string(),
         {std::string(100000, 's')},
         {{Json::array(), "msg.v: expected a string, got array"}}},
        {integer(0),
         {0, 9223372036854775807LL},
         {{-1, "msg.v: -1 is out of range (0..9223372036854775807)"},
          {9223372036854775808ULL,
           "msg.v: 9223372036854775808 is out of range (0..9223372036854775807)"},
          {1.5, "msg.v: expected an integer, got 1.5"},
          {"1", "msg.v: expected an integer, got string"}}},
        {integer(0, 1), {0, 1}, {{2, "msg.v: 2 is out of range (0..1)"}}},
        {integer(),
         {-9223372036854775807LL - 1, 5},
         {{true, "msg.v: expected an integer, got boolean"}}},
        {number(1.0),
         {0, 0.5, 1},
         {{1.5, "msg.v: 1.5 is out of range (0..1.0)"},
          {-0.1, "msg.v: -0.1 is out of range (0..1.0)"},
          {"0.5", "msg.v: expected a number, got string"}}},
        {boolean(), {true, false}, {{1, "msg.v: expected a boolean, got number"}}},
        {flag(),
         {true, false, 0, 1},
         {{2, "msg.v: 2 is out of range (0..1)"}, {"1", "msg.v: expected 0 or 1, got string"}}},
        {any_object(),
         {Json::object(), Json{{"x", {1, 2}}}},
         {{Json::array(), "msg.v: expected an object, got array"}}},
        {string_list(2),
         {Json::array(), Json{"a", "bb"}},
         {{"a", "msg.v: expected an array of strings, got string"},
          {Json{"a", 1}, "msg.v[1]: expected a string, got number"},
          {Json{"abc"}, "msg.v[0]: a string of 3 bytes, longer than the limit of 2"}}},
        {string_map(2),
         {Json::object(), Json{{"k", "vv"}}},
         {{Json::array(), "msg.v: expected an object of strings, got array"},
          {Json{{"k", 1}}, "msg.v.k: expected a string, got number"},
          {Json{{"kkk", "v"}}, "msg.v.kkk: a key of 3 bytes, longer than the limit of 2"}}},
    };
    for (const Case& test : cases) {
        for (const Json& value : test.accepted) {
            INFO(value.dump());
            CHECK(refusal(test.shape, value) == "");
        }
        for (const auto& [value, message] : test.refused) {
            INFO(value.dump());
            CHECK(refusal(test.shape, value) == message);
        }
    }
}

TEST_CASE("json_shape: the field wording says what was found and what was expected",
          "[json_shape]") {
    CHECK(refusal(integer(), "12", kFieldForm) ==
          "agent/call field 'v' is a string, expected an integer");
    CHECK(refusal(integer(), 18446744073709551615ULL, kFieldForm) ==
          "agent/call field 'v' is the number 18446744073709551615, expected an integer");
    CHECK(refusal(integer(0, 1), 9.5, kFieldForm) ==
          "agent/call field 'v' is the number 9.5, expected an integer 0..1");
    CHECK(refusal(flag(), 2, kFieldForm) ==
          "agent/call field 'v' is the number 2, expected 0 or 1");
    CHECK(refusal(string(2), Json::array(), kFieldForm) ==
          "agent/call field 'v' is an array, expected a string of at most 2 bytes");
    CHECK(refusal(string(2), "abc", kFieldForm) ==
          "agent/call field 'v' is a string of 3 bytes, longer than the limit of 2");
    CHECK(refusal(number(30.0), nullptr, kFieldForm) == "");  // null: absent, and optional
}

TEST_CASE("json_shape: a required field that is absent or null is missing", "[json_shape]") {
    const std::array fields = {Field{"id", integer(), Presence::kRequired}};
    for (Json object : {Json::object(), Json{{"id", nullptr}}}) {
        INFO(object.dump());
        auto path = check_object(object, fields, kPathForm);
        REQUIRE_FALSE(path.ok());
        CHECK(path.error().code == errc::kProtocol);
        CHECK(path.error().message == "msg.id: missing");
        auto field = check_object(object, fields, kFieldForm);
        REQUIRE_FALSE(field.ok());
        CHECK(field.error().message == "agent/call answered without field 'id'");
    }
}

TEST_CASE("json_shape: a null optional field and unknown keys are left out, the rest moved",
          "[json_shape]") {
    const std::array fields = {Field{"name", string()}, Field{"size", integer(0)},
                               Field{"note", string()}};
    Json object = {{"name", "disk"}, {"size", 7}, {"note", nullptr}, {"extra", "dropped"}};
    auto checked = check_object(object, fields, kPathForm);
    REQUIRE(checked.ok());
    CHECK(*checked == Json{{"name", "disk"}, {"size", 7}});
    CHECK(object["name"].is_null());  // moved out, not copied
}

TEST_CASE("json_shape: a violation in a nested record names its whole path", "[json_shape]") {
    static constexpr std::array kInner = {Field{"id", string(), Presence::kRequired}};
    static constexpr std::array kOuter = {Field{"os", record(), Presence::kOptional, kInner}};
    const std::array fields = {Field{"outer", record(), Presence::kRequired, kOuter}};

    Json wrong = {{"outer", {{"os", {{"id", 13}, {"extra", 1}}}}}};
    CHECK(check_object(wrong, fields, kPathForm).error().message ==
          "msg.outer.os.id: expected a string, got number");
    Json again = {{"outer", {{"os", {{"id", 13}}}}}};
    CHECK(check_object(again, fields, kFieldForm).error().message ==
          "agent/call field 'outer.os.id' is the number 13, expected a string");
    Json missing = {{"outer", {{"os", Json::object()}}}};
    CHECK(check_object(missing, fields, kPathForm).error().message == "msg.outer.os.id: missing");
    Json not_object = {{"outer", "x"}};
    CHECK(check_object(not_object, fields, kPathForm).error().message ==
          "msg.outer: expected an object, got string");

    Json right = {{"outer", {{"os", {{"id", "debian"}, {"extra", 1}}}}}};
    auto checked = check_object(right, fields, kPathForm);
    REQUIRE(checked.ok());
    CHECK(*checked == Json{{"outer", {{"os", {{"id", "debian"}}}}}});
}

TEST_CASE("json_shape: the object itself, the caller's error code, a key the sender chose",
          "[json_shape]") {
    const std::array fields = {Field{"v", string_map(8)}};
    Json array = Json::array({1});
    CHECK(check_object(array, fields, kPathForm).error().message ==
          "msg: expected an object, got array");
    CHECK(check_object(array, fields, kFieldForm).error().message ==
          "agent/call answered an array, expected an object");
    Json object = Json::array();
    CHECK(check_object(object, fields, {errc::kAgent, "x", Wording::kPath}).error().code ==
          errc::kAgent);
    // A key is shown printable and at most 64 bytes long.
    Json strange = {{"v", {{"a\x01" + std::string(70, 'k'), 5}}}};
    CHECK(check_object(strange, fields, kPathForm).error().message ==
          "msg.v.a?" + std::string(62, 'k') + "...: a key of 72 bytes, longer than the limit of 8");
}
