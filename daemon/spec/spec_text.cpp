#include "daemon/spec/spec_text.h"

#include <algorithm>

#include "common/text.h"

namespace ds {

std::string in_quotes(std::string_view text) {
    return "'" + std::string(text) + "'";
}

bool is_name(std::string_view text) {
    if (text.empty() || text.size() > 64) return false;
    return std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

bool contains(const std::vector<std::string_view>& words, std::string_view word) {
    return std::find(words.begin(), words.end(), word) != words.end();
}

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> previous(b.size() + 1), current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) previous[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
        }
        std::swap(previous, current);
    }
    return previous[b.size()];
}

}  // namespace

std::string suggestion(std::string_view word, const std::vector<std::string_view>& candidates) {
    std::string_view best;
    std::size_t best_distance = 3;
    for (std::string_view candidate : candidates) {
        const std::size_t distance = edit_distance(word, candidate);
        if (distance < best_distance && distance < std::max<std::size_t>(word.size(), 2)) {
            best = candidate;
            best_distance = distance;
        }
    }
    return best.empty() ? "" : " Did you mean " + in_quotes(best) + "?";
}

std::string unknown_choice(std::string_view what, std::string_view word, std::string_view where,
                           std::string_view valid_label,
                           const std::vector<std::string_view>& valid) {
    std::string message = "unknown " + std::string(what) + " " + in_quotes(word);
    if (!where.empty()) message += " " + std::string(where);
    message += "; " + std::string(valid_label) + ": " + join(valid, ", ") + ".";
    return message + suggestion(word, valid);
}

Error spec_error(std::string message) {
    return make_error(errc::kInvalidSpec, std::move(message));
}

bool parse_duration_text(std::string_view text, const std::vector<DurationUnit>& units,
                         std::uint64_t& value) {
    std::size_t digits = 0;
    std::uint64_t number = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
        if (number > 1'000'000'000'000ull) return false;
        number = number * 10 + static_cast<std::uint64_t>(text[digits] - '0');
        ++digits;
    }
    if (digits == 0) return false;
    const std::string_view suffix = text.substr(digits);
    if (suffix.empty()) {
        value = number;
        return true;
    }
    for (const auto& unit : units) {
        if (unit.name == suffix) {
            value = number * unit.multiplier;
            return true;
        }
    }
    return false;
}

}  // namespace ds
