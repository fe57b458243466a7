#include "common/units.h"

#include <array>
#include <charconv>
#include <limits>
#include <string>

#include "common/text.h"

namespace ds {
namespace {

// The leading decimal digits of `text` and what follows them; nullopt when
// there are none or they overflow.
struct Number {
    std::uint64_t value = 0;
    std::string_view suffix;
};

std::optional<Number> leading_number(std::string_view text) {
    Number number;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number.value);
    if (error != std::errc() || end == text.data()) return std::nullopt;
    number.suffix = text.substr(static_cast<std::size_t>(end - text.data()));
    return number;
}

std::optional<std::uint64_t> times(std::uint64_t value, std::uint64_t multiplier) {
    if (multiplier != 0 && value > std::numeric_limits<std::uint64_t>::max() / multiplier)
        return std::nullopt;
    return value * multiplier;
}

// The multiplier a size suffix stands for ("" and "b" are bytes).
std::optional<std::uint64_t> size_multiplier(std::string_view suffix, SizePrefixes prefixes) {
    std::string unit = ascii_lower(suffix);
    if (!unit.empty() && unit.back() == 'b') unit.pop_back();  // "kb", "kib", "b"
    if (unit.empty()) return 1;
    static constexpr std::string_view kPrefixes = "kmgtp";
    const bool iec_spelling = unit.size() == 2 && unit[1] == 'i';
    if (unit.size() != (iec_spelling ? 2u : 1u)) return std::nullopt;
    const std::size_t power = kPrefixes.find(unit[0]);
    if (power == std::string_view::npos) return std::nullopt;
    const bool decimal = prefixes == SizePrefixes::kFio && iec_spelling;
    std::uint64_t multiplier = 1;
    for (std::size_t i = 0; i <= power; ++i) multiplier *= decimal ? 1000 : 1024;
    return multiplier;
}

struct TimeUnit {
    std::string_view name;
    std::uint64_t microseconds;
};

// The units fio 3.33 reads as its HOWTO says. Not "sec", "min", "hour" or
// "day": fio's get_mult_time() matches "s", "m", "h", "d" exactly and reads
// any other suffix as microseconds ("10sec" is 10 us there), so they are
// refused rather than read either way.
constexpr std::array<TimeUnit, 9> kFioTimeUnits = {{
    {"us", 1},
    {"usec", 1},
    {"ms", 1000},
    {"msec", 1000},
    {"s", 1000000},
    {"m", 60000000},
    {"h", 3600000000},
    {"d", 86400000000},
    {"", 1000000},  // no unit: seconds
}};

}  // namespace

std::optional<std::uint64_t> parse_size(std::string_view text, SizePrefixes prefixes) {
    const auto number = leading_number(text);
    if (!number) return std::nullopt;
    const auto multiplier = size_multiplier(number->suffix, prefixes);
    if (!multiplier) return std::nullopt;
    return times(number->value, *multiplier);
}

std::optional<std::uint64_t> parse_fio_size(std::string_view text) {
    return parse_size(text, SizePrefixes::kFio);
}

std::optional<std::uint64_t> parse_fio_time_us(std::string_view text) {
    const auto number = leading_number(text);
    if (!number) return std::nullopt;
    const std::string unit = ascii_lower(number->suffix);
    for (const auto& known : kFioTimeUnits) {
        if (known.name == unit) return times(number->value, known.microseconds);
    }
    return std::nullopt;
}

std::optional<double> parse_fio_seconds(std::string_view text) {
    const auto microseconds = parse_fio_time_us(text);
    if (!microseconds) return std::nullopt;
    return static_cast<double>(*microseconds) / 1e6;
}

}  // namespace ds
