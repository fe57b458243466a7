#include "daemon/backends/hypervisor/qemu_block.h"

#include <array>
#include <charconv>
#include <vector>

#include "common/text.h"

namespace ds {
namespace {

Error info_block_error(std::string_view device, const std::string& why) {
    return make_error(errc::kHypervisor,
                      "QEMU `info block`, device " + std::string(device) + ": " + why);
}

// The lines of the device's paragraph: its first line and the indented
// ones after it; empty when no paragraph starts with `device`.
std::vector<std::string_view> device_lines(std::string_view text, std::string_view device) {
    std::vector<std::string_view> lines;
    bool inside = false;
    while (!text.empty()) {
        const std::size_t end = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, end);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        text.remove_prefix(std::min(end + 1, text.size()));
        const bool indented = line.starts_with(' ');
        if (!indented) {
            if (inside) break;
            const std::string_view rest =
                line.starts_with(device) ? line.substr(device.size()) : std::string_view("x");
            inside = rest.starts_with(' ') || rest.starts_with(':');
        }
        if (inside) lines.push_back(line);
    }
    return lines;
}

// "key=value" of the throttling line, as a count.
std::optional<long long> throttle_value(std::string_view line, std::string_view key) {
    const std::string needle = " " + std::string(key) + "=";
    const std::size_t at = line.find(needle);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view rest = line.substr(at + needle.size());
    rest = rest.substr(0, rest.find(' '));
    long long value = 0;
    const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (error != std::errc() || end != rest.data() + rest.size() || value < 0) return std::nullopt;
    return value;
}

// "writeback, direct" -> the cache mode.
std::string cache_mode_of(std::string_view value) {
    const bool writeback = value.starts_with("writeback");
    const bool direct = value.find(", direct") != std::string_view::npos;
    const bool no_flush = value.find(", ignore flushes") != std::string_view::npos;
    return cache_mode_from_flags(direct, writeback, no_flush);
}

// The format between the last parentheses of the first line: "(raw)",
// "(qcow2, read-only)".
std::optional<std::string> image_format_of(std::string_view first_line) {
    const std::size_t open = first_line.rfind('(');
    if (open == std::string_view::npos || !first_line.ends_with(')')) return std::nullopt;
    std::string_view inside = first_line.substr(open + 1, first_line.size() - open - 2);
    inside = inside.substr(0, inside.find(','));
    if (inside.empty()) return std::nullopt;
    return std::string(inside);
}

}  // namespace

namespace {

struct ModeFlags {
    CacheMode mode;
    QemuCacheFlags flags;
};
// QEMU's definition of libvirt's cache names (qemu-options.hx, -drive cache=).
constexpr std::array<ModeFlags, 5> kCacheModeFlags = {{
    {CacheMode::kNone, {true, true, false}},
    {CacheMode::kWriteback, {false, true, false}},
    {CacheMode::kWritethrough, {false, false, false}},
    {CacheMode::kDirectsync, {true, false, false}},
    {CacheMode::kUnsafe, {false, true, true}},
}};

}  // namespace

QemuCacheFlags qemu_cache_flags(CacheMode cache) {
    for (const ModeFlags& entry : kCacheModeFlags) {
        if (entry.mode == cache) return entry.flags;
    }
    return kCacheModeFlags.front().flags;
}

std::string cache_mode_from_flags(bool direct, bool writeback, bool no_flush) {
    for (const ModeFlags& entry : kCacheModeFlags) {
        const QemuCacheFlags& flags = entry.flags;
        if (flags.direct == direct && flags.writeback == writeback && flags.no_flush == no_flush)
            return std::string(to_string(entry.mode));
    }
    const auto flag = [](bool value) { return value ? "on" : "off"; };
    return std::string("direct=") + flag(direct) + ",writeback=" + flag(writeback) +
           ",no-flush=" + flag(no_flush);
}

Result<Json> parse_info_block(std::string_view text, std::string_view device) {
    const std::vector<std::string_view> lines = device_lines(text, device);
    if (lines.empty()) return info_block_error(device, "not listed");
    if (lines.front().find("[not inserted]") != std::string_view::npos) {
        return info_block_error(device, "no medium inserted");
    }
    const auto format = image_format_of(lines.front());
    if (!format)
        return info_block_error(device, "no (format) on \"" + std::string(lines[0]) + "\"");
    Json settings = {{"image_format", *format}, {"detect_zeroes", "off"}};
    Json sources = {{"image_format", "info block first line"},
                    {"detect_zeroes", "info block Detect zeroes (none printed: off)"}};
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const std::string_view line = trim_whitespace(lines[i]);
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view key = line.substr(0, colon);
        const std::string value(trim_whitespace(line.substr(colon + 1)));
        if (key == "Cache mode") {
            settings["cache"] = cache_mode_of(value);
            sources["cache"] = "info block Cache mode";
        } else if (key == "Detect zeroes") {
            settings["detect_zeroes"] = value;
            sources["detect_zeroes"] = "info block Detect zeroes";
        } else if (key == "I/O throttling") {
            const auto iops = throttle_value(line, "iops");
            const auto bps = throttle_value(line, "bps");
            if (!iops || !bps) {
                return info_block_error(device, "I/O throttling line without iops= and bps=: \"" +
                                                    std::string(line) + "\"");
            }
            if (*iops > 0) settings["iops_limit"] = *iops;
            if (*bps > 0) settings["bandwidth_limit"] = *bps;
            sources["iops_limit"] = sources["bandwidth_limit"] = "info block I/O throttling";
        }
    }
    if (!settings.contains("cache")) return info_block_error(device, "no Cache mode line");
    if (settings["detect_zeroes"] == "unmap") {
        settings["discard"] = true;
        sources["discard"] = "info block Detect zeroes unmap";
    }
    settings["sources"] = std::move(sources);
    return settings;
}

}  // namespace ds
