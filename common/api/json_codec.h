// The one way the API's typed messages (common/api/*.h) are read from and
// written to JSON. Each message is a struct with
//   Json to_json(const T&)                           the daemon's encoder, and
//   static Result<T> T::from_json(const Json&, std::string_view path = "")
// hostctl's decoder. The encoder writes exactly what the daemon sends; the
// decoder is as tolerant as hostctl's printers: a field that is absent or
// null reads as nullopt (or the member's default), so an older or newer
// daemon's reply still prints. A field present with another JSON type
// makes the whole reply unusable: errc::kProtocol naming its path below the
// reply ("sweeps[2].status: expected a string, got number").
#pragma once

#include <concepts>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_fields.h"
#include "common/result.h"

namespace ds::api {

// A message with the decoder of the convention above.
template <class T>
concept DecodableMessage = requires(const Json& json, std::string_view path) {
    { T::from_json(json, path) } -> std::same_as<Result<T>>;
};

// Reads the fields of one JSON object into a struct, keeping the first
// violation: each read() leaves its target alone once one was found.
class ObjectReader {
  public:
    // `value` is the object at `path` ("" for the reply itself).
    ObjectReader(const Json& value, std::string_view path);

    // Absent or null: the target stays as it is (nullopt, its default).
    void read(std::string_view key, std::optional<std::string>& target);
    void read(std::string_view key, std::optional<std::int64_t>& target);
    void read(std::string_view key, std::optional<double>& target);
    void read(std::string_view key, std::optional<bool>& target);
    void read(std::string_view key, std::int64_t& target);
    void read(std::string_view key, std::vector<std::string>& target);
    void read(std::string_view key, std::vector<std::int64_t>& target);
    // Any JSON, passed through as it is: for blobs the client prints
    // generically (a member's comment says which).
    void read(std::string_view key, Json& target);
    void read(std::string_view key, std::optional<Json>& target);

    // A nested message, decoded by its own from_json at its path.
    template <DecodableMessage T>
    void read(std::string_view key, T& target) {
        if (const Json* value = present(key)) decode_into(*value, path_of(key), target);
    }
    template <DecodableMessage T>
    void read(std::string_view key, std::optional<T>& target) {
        if (const Json* value = present(key)) decode_into(*value, path_of(key), target.emplace());
    }
    template <DecodableMessage T>
    void read(std::string_view key, std::vector<T>& target) {
        const Json* list = present(key);
        if (!list || !expect(list->is_array(), *list, path_of(key), "an array")) return;
        for (std::size_t i = 0; i < list->size(); ++i)
            decode_into((*list)[i], path_of(key) + "[" + std::to_string(i) + "]",
                        target.emplace_back());
    }

    // `value` when every read() succeeded, else the first violation.
    template <class T>
    Result<T> finish(T value) const {
        if (error_) return *error_;
        return value;
    }

  private:
    // The field's value, or nullptr when it is absent, null, or a violation
    // was found already.
    const Json* present(std::string_view key) const;
    std::string path_of(std::string_view key) const;
    // A list of scalars (strings, integers), each element checked.
    template <class T>
    void read_list(std::string_view key, std::vector<T>& target);
    // Whether `ok`; records "PATH: expected WANTED, got TYPE" when not.
    bool expect(bool ok, const Json& value, const std::string& path, std::string_view wanted);

    template <DecodableMessage T>
    void decode_into(const Json& value, const std::string& path, T& target) {
        if (error_) return;
        auto decoded = T::from_json(value, path);
        if (decoded.ok()) {
            target = std::move(decoded).value();
        } else {
            error_ = decoded.error();
        }
    }

    const Json& object_;
    std::string path_;
    std::optional<Error> error_;
};

// The encoders' counterpart of a nullopt: JSON null.
template <class T>
Json value_or_null(const std::optional<T>& value) {
    return value ? Json(*value) : Json();
}

// The encoders' list of messages: each by its to_json, in order.
template <class T>
Json json_array(const std::vector<T>& messages) {
    Json list = Json::array();
    for (const T& message : messages) list.push_back(to_json(message));
    return list;
}

// Decodes a whole reply, T::from_json at the root.
template <DecodableMessage T>
Result<T> decode(const Json& reply) {
    return T::from_json(reply, "");
}

}  // namespace ds::api
