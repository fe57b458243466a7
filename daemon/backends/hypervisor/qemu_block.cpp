#include "daemon/backends/hypervisor/qemu_block.h"

#include <charconv>
#include <map>

#include "common/text.h"

namespace ds {
namespace {

// The text's lines without their "\n" or "\r\n".
std::vector<std::string_view> text_lines(std::string_view text) {
    std::vector<std::string_view> lines;
    while (!text.empty()) {
        const std::size_t end = std::min(text.find('\n'), text.size());
        std::string_view line = text.substr(0, end);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        text.remove_prefix(std::min(end + 1, text.size()));
    }
    return lines;
}

// The paragraphs: each unindented, non-empty line with the indented lines
// after it (print_block_info indents every line but the first by four).
std::vector<std::vector<std::string_view>> paragraphs(std::string_view text) {
    std::vector<std::vector<std::string_view>> found;
    bool inside = false;
    for (const std::string_view line : text_lines(text)) {
        if (!line.starts_with(' ')) {
            inside = !line.empty();
            if (inside) found.emplace_back();
        }
        if (inside) found.back().push_back(line);
    }
    return found;
}

// The name a first line starts with: up to " (" (a named device's node) or
// ":".
std::string_view first_line_name(std::string_view line) {
    return line.substr(0, std::min(line.find(" ("), line.find(':')));
}

// "NAME[ (NODE)]: FILE (DRIVER[, flags])" into the entry, or why not.
std::optional<std::string> read_first_line(std::string_view line, HmpBlockEntry& entry) {
    const std::size_t colon = line.find(": ");
    if (colon == std::string_view::npos) return "no \": \" after the name";
    entry.name = std::string(first_line_name(line));
    const std::string_view rest = line.substr(colon + 2);
    if (rest == "[not inserted]") {
        entry.inserted = false;
        return std::nullopt;
    }
    const std::size_t open = rest.rfind(" (");
    if (open == std::string_view::npos || !rest.ends_with(')')) return "no (format)";
    std::string_view inside = rest.substr(open + 2, rest.size() - open - 3);
    inside = inside.substr(0, inside.find(','));
    if (inside.empty()) return "no (format)";
    entry.file = std::string(rest.substr(0, open));
    entry.driver = std::string(inside);
    return std::nullopt;
}

// "writeback, direct" -> the flags; none for any other first word.
std::optional<QemuCacheFlags> cache_line_flags(std::string_view value) {
    const bool writeback = value.starts_with("writeback");
    if (!writeback && !value.starts_with("writethrough")) return std::nullopt;
    return QemuCacheFlags{.direct = value.find(", direct") != std::string_view::npos,
                          .writeback = writeback,
                          .no_flush = value.find(", ignore flushes") != std::string_view::npos};
}

// The indented "Key:   value" lines into the entry.
void read_detail_lines(const std::vector<std::string_view>& lines, HmpBlockEntry& entry) {
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const std::string_view line = trim_whitespace(lines[i]);
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view key = line.substr(0, colon);
        const std::string value(trim_whitespace(line.substr(colon + 1)));
        if (key == "Cache mode") entry.cache = cache_line_flags(value);
        if (key == "Detect zeroes") entry.detect_zeroes = value;
        if (key == "I/O throttling") entry.throttling = value;
    }
}

// The paragraph as an entry, or why it does not parse.
Result<HmpBlockEntry> read_paragraph(const std::vector<std::string_view>& lines) {
    HmpBlockEntry entry;
    if (auto why = read_first_line(lines.front(), entry))
        return make_error(errc::kHypervisor, *why + " on \"" + std::string(lines.front()) + "\"");
    read_detail_lines(lines, entry);
    if (entry.inserted && !entry.cache)
        return make_error(errc::kHypervisor, "no readable Cache mode line");
    return entry;
}

Error info_block_error(std::string_view device, const std::string& why) {
    return make_error(errc::kHypervisor,
                      "QEMU `info block`, device " + std::string(device) + ": " + why);
}

// The line's "key=value" words: "bps=1 bps_rd=0 ... group=drive-scsi1".
std::map<std::string, std::string, std::less<>> throttle_words(std::string_view line) {
    std::map<std::string, std::string, std::less<>> words;
    for (const std::string& word : split_list(line, ' ')) {
        const std::size_t equals = word.find('=');
        if (equals != std::string::npos) words[word.substr(0, equals)] = word.substr(equals + 1);
    }
    return words;
}

// A count of the throttling line: digits only.
std::optional<long long> throttle_count(const std::string& text) {
    long long value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < 0)
        return std::nullopt;
    return value;
}

// Each non-zero field of the I/O throttling line under its key; an error
// naming the first field missing or not a count (a truncated line).
Status read_throttling(std::string_view device, std::string_view line, Json& settings,
                       Json& sources) {
    const auto words = throttle_words(line);
    for (const ThrottleField& field : kThrottleFields) {
        const auto word = words.find(field.hmp);
        const auto value = word == words.end() ? std::nullopt : throttle_count(word->second);
        if (!value) {
            return info_block_error(device, "I/O throttling line without a count for " +
                                                std::string(field.hmp) + "=: \"" +
                                                std::string(line) + "\"");
        }
        const std::string key(field.key);
        if (*value > 0) settings[key] = *value;
        sources[key] = "info block I/O throttling " + std::string(field.hmp);
    }
    return ok_status();
}

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

Result<HmpBlockEntry> read_hmp_block_entry(std::string_view text, std::string_view name,
                                           std::string_view command) {
    const std::string where = "QEMU `" + std::string(command) + "`, " + std::string(name) + ": ";
    for (const auto& lines : paragraphs(text)) {
        if (first_line_name(lines.front()) != name) continue;
        auto entry = read_paragraph(lines);
        if (!entry.ok()) return make_error(errc::kHypervisor, where + entry.error().message);
        return entry;
    }
    return make_error(errc::kHypervisor, where + "not listed");
}

std::vector<HmpBlockEntry> read_hmp_block_entries(std::string_view text) {
    std::vector<HmpBlockEntry> entries;
    for (const auto& lines : paragraphs(text)) {
        auto entry = read_paragraph(lines);
        if (entry.ok()) entries.push_back(std::move(entry).value());
    }
    return entries;
}

bool add_discard_implied(Json& settings) {
    if (!settings.contains("detect_zeroes") || settings.at("detect_zeroes") != "unmap")
        return false;
    settings["discard"] = true;
    settings["sources"]["discard"] = "Detect zeroes unmap (QEMU refuses it without discard)";
    return true;
}

Result<Json> parse_info_block(std::string_view text, std::string_view device) {
    DS_ASSIGN_OR_RETURN(const HmpBlockEntry entry,
                        read_hmp_block_entry(text, device, "info block"));
    if (!entry.inserted) return info_block_error(device, "no medium inserted");
    const QemuCacheFlags& cache = *entry.cache;
    Json settings = {
        {"image_format", entry.driver},
        {"detect_zeroes", entry.detect_zeroes},
        {"cache", cache_mode_from_flags(cache.direct, cache.writeback, cache.no_flush)}};
    Json sources = {{"image_format", "info block first line"},
                    {"cache", "info block Cache mode"},
                    {"detect_zeroes", entry.detect_zeroes == "off"
                                          ? "info block Detect zeroes (none printed: off)"
                                          : "info block Detect zeroes"}};
    if (entry.throttling) DS_TRY(read_throttling(device, *entry.throttling, settings, sources));
    settings["sources"] = std::move(sources);
    add_discard_implied(settings);
    return settings;
}

}  // namespace ds
