#include "daemon/backends/hypervisor/proxmox/pve_encoding.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <regex>

namespace ds {

namespace {

bool is_unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

// PVE's option names: a lower-case letter, then lower-case letters, digits,
// '_' and '-' ("mbps_rd", "import-from", "scsi1").
bool is_option_name(std::string_view key) {
    static const std::regex name("[a-z][a-z0-9_-]*");
    return std::regex_match(key.begin(), key.end(), name);
}

Error property_error(const std::string& what) {
    return make_error(errc::kInvalidArgument, "PVE property string: " + what);
}

Status check_entry(const std::string& key, const std::string& value) {
    if (!is_option_name(key)) return property_error("'" + key + "' is not a PVE option name");
    if (value.empty()) return property_error("key '" + key + "' has an empty value");
    if (value.find(',') != std::string::npos) {
        return property_error("the value of '" + key + "' holds a ',' (PVE splits on it)");
    }
    return ok_status();
}

Status check_default_value(const std::string& value) {
    if (value.find_first_of(",=") != std::string::npos) {
        return property_error("the default value holds ',' or '=' (it would not read back)");
    }
    return ok_status();
}

}  // namespace

std::string pve_percent_encode(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string encoded;
    encoded.reserve(text.size());
    for (unsigned char c : text) {
        if (is_unreserved(c)) {
            encoded += static_cast<char>(c);
        } else {
            encoded += '%';
            encoded += kHex[c >> 4];
            encoded += kHex[c & 0xF];
        }
    }
    return encoded;
}

std::string pve_path(std::initializer_list<std::string_view> segments) {
    std::string path;
    for (std::string_view segment : segments) path += "/" + pve_percent_encode(segment);
    return path;
}

bool is_pve_vmid(std::int64_t vmid) {
    return vmid >= kPveVmidMin && vmid <= kPveVmidMax;
}

bool is_pve_storage_id(std::string_view text) {
    const auto letter = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
    const auto letter_or_digit = [&](char c) {
        return letter(c) || std::isdigit(static_cast<unsigned char>(c)) != 0;
    };
    if (text.size() < 2 || !letter(text.front()) || !letter_or_digit(text.back())) return false;
    return std::all_of(text.begin(), text.end(), [&](char c) {
        return letter_or_digit(c) || c == '-' || c == '_' || c == '.';
    });
}

std::string pve_number_text(double value) {
    if (!std::isfinite(value)) return "";
    char buffer[64];
    auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
    return error == std::errc() ? std::string(buffer, end) : "";
}

std::optional<std::string> pve_config_text(const Json& config, const std::string& key) {
    if (!config.contains(key)) return std::nullopt;
    const Json& value = config[key];
    return value.is_string() ? value.get<std::string>() : value.dump();
}

// ---- PvePropertyString --------------------------------------------------------------------------

PvePropertyString::PvePropertyString(std::string default_value)
    : default_value_(std::move(default_value)) {}

PvePropertyString& PvePropertyString::set(std::string key, std::string value) {
    entries_.emplace_back(std::move(key), std::move(value));
    return *this;
}

PvePropertyString& PvePropertyString::set_flag(std::string key, bool value) {
    return set(std::move(key), value ? "1" : "0");
}

PvePropertyString& PvePropertyString::set_integer(std::string key, std::int64_t value) {
    return set(std::move(key), std::to_string(value));
}

PvePropertyString& PvePropertyString::set_number(std::string key, double value) {
    return set(std::move(key), pve_number_text(value));
}

Result<std::string> PvePropertyString::encode() const {
    DS_TRY(check_default_value(default_value_));
    std::string text = default_value_;
    for (const auto& [key, value] : entries_) {
        DS_TRY(check_entry(key, value));
        text += (text.empty() ? "" : ",") + key + "=" + value;
    }
    return text;
}

Result<PvePropertyString> PvePropertyString::parse(std::string_view text) {
    PvePropertyString parsed;
    bool has_default = false;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = std::min(text.find(',', start), text.size());
        std::string_view part = text.substr(start, end - start);
        start = end + 1;
        if (part.empty()) continue;
        std::size_t equals = part.find('=');
        if (equals == std::string_view::npos) {
            if (has_default)
                return property_error("two values without a key in '" + std::string(text) + "'");
            parsed.default_value_ = part;
            has_default = true;
        } else {
            parsed.set(std::string(part.substr(0, equals)), std::string(part.substr(equals + 1)));
        }
    }
    return parsed;
}

std::optional<std::string> PvePropertyString::get(std::string_view key) const {
    for (const auto& [name, value] : entries_) {
        if (name == key) return value;
    }
    return std::nullopt;
}

// ---- PveParams ----------------------------------------------------------------------------------

namespace {

Error params_error(const std::string& key, const std::string& what) {
    return make_error(errc::kInvalidArgument, "PVE parameter '" + key + "': " + what);
}

// One value of a query string: PVE's form decoding drops an empty one.
Status check_query_value(const std::string& key, const std::string& value) {
    if (value.empty()) {
        return params_error(key,
                            "an empty value cannot be sent in a query string (PVE's "
                            "decode_urlencoded drops it)");
    }
    return ok_status();
}

// A value as the query string spells it: strings as they are, numbers as
// their JSON text (the integer's digits, pve_number_text's shortest form).
std::string query_text(const Json& value) {
    return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace

PveParams& PveParams::add(std::string key, Json value) {
    const bool repeated = std::any_of(fields_.begin(), fields_.end(),
                                      [&](const Field& field) { return field.key == key; });
    if (repeated && !error_) error_ = params_error(key, "given twice");
    fields_.push_back({std::move(key), std::move(value)});
    return *this;
}

PveParams& PveParams::set(std::string key, std::string value) {
    return add(std::move(key), Json(std::move(value)));
}

PveParams& PveParams::set_flag(std::string key, bool value) {
    return add(std::move(key), Json(value ? 1 : 0));
}

PveParams& PveParams::set_integer(std::string key, std::int64_t value) {
    return add(std::move(key), Json(value));
}

PveParams& PveParams::set_number(std::string key, double value) {
    if (!std::isfinite(value) && !error_) error_ = params_error(key, "not a finite number");
    // Whole numbers as integers: "100", as pve_number_text writes them.
    const bool whole =
        std::isfinite(value) && std::trunc(value) == value && std::fabs(value) < 1e15;
    return add(std::move(key), whole ? Json(static_cast<std::int64_t>(value)) : Json(value));
}

PveParams& PveParams::set_property_string(std::string key, const PvePropertyString& value) {
    Result<std::string> text = value.encode();
    if (!text) {
        if (!error_) error_ = make_error(text.error().code, key + ": " + text.error().message);
        return *this;
    }
    return set(std::move(key), std::move(text).value());
}

PveParams& PveParams::set_array(std::string key, const std::vector<std::string>& items) {
    return add(std::move(key), Json(items));
}

Result<std::string> PveParams::encode_query() const {
    if (error_) return *error_;
    std::string encoded;
    auto append = [&](const std::string& key, const std::string& value) -> Status {
        DS_TRY(check_query_value(key, value));
        if (!encoded.empty()) encoded += '&';
        encoded += pve_percent_encode(key) + "=" + pve_percent_encode(value);
        return ok_status();
    };
    for (const Field& field : fields_) {
        if (field.value.is_array()) {
            for (const Json& item : field.value) DS_TRY(append(field.key, item.get<std::string>()));
        } else {
            DS_TRY(append(field.key, query_text(field.value)));
        }
    }
    return encoded;
}

Result<std::string> PveParams::encode_json() const {
    if (error_) return *error_;
    Json body = Json::object();
    for (const Field& field : fields_) body[field.key] = field.value;
    // Invalid UTF-8 (a value PVE could not decode either) becomes U+FFFD.
    return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// ---- UPIDs --------------------------------------------------------------------------------------

Result<PveUpid> parse_pve_upid(std::string_view text) {
    static const std::regex upid(
        "UPID:([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?):[0-9A-Fa-f]{8}:[0-9A-Fa-f]{8,9}:"
        "[0-9A-Fa-f]{8}:([^:\\s/]+):([^:\\s/]*):([^:\\s/]+):");
    std::match_results<std::string_view::const_iterator> match;
    if (!std::regex_match(text.begin(), text.end(), match, upid)) {
        return make_error(errc::kProtocol, "not a PVE task id (UPID): '" + std::string(text) + "'");
    }
    return PveUpid{std::string(text), match[1].str(), match[3].str(), match[4].str(),
                   match[5].str()};
}

}  // namespace ds
