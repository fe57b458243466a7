#include "hostctl/invocation.h"

#include <cctype>
#include <charconv>

namespace ds::hostctl {

std::optional<long> id_argument(Invocation& invocation, const std::string& name) {
    const std::string& text = invocation.argument(name);
    long id = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() || id <= 0) {
        invocation.usage_error(name + " must be a positive integer, not '" + text + "'");
        return std::nullopt;
    }
    return id;
}

ExitCode print_reply(Invocation& invocation, const ApiReply& reply,
                     std::string (*format)(const Json&)) {
    if (!reply.ok()) return invocation.fail(reply);
    if (invocation.json_output) {
        invocation.print_json(reply.body);
    } else {
        invocation.out << format(reply.body);
    }
    return ExitCode::kOk;
}

ExitCode print_get(Invocation& invocation, const std::string& target,
                   std::string (*format)(const Json&)) {
    return print_reply(invocation, invocation.client.get(target), format);
}

std::string query_component(std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string encoded;
    for (unsigned char c : text) {
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            encoded += static_cast<char>(c);
        } else {
            encoded += {'%', kHex[c >> 4], kHex[c & 0xF]};
        }
    }
    return encoded;
}

}  // namespace ds::hostctl
