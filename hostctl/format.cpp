#include "hostctl/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ds::hostctl {

std::string single_line(std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    std::replace(text.begin(), text.end(), '\r', ' ');
    return text;
}

std::string pad_left(const std::string& text, std::size_t width) {
    std::size_t shown = display_width(text);
    return shown >= width ? text : std::string(width - shown, ' ') + text;
}

std::string pad_right(const std::string& text, std::size_t width) {
    std::size_t shown = display_width(text);
    return shown >= width ? text : text + std::string(width - shown, ' ');
}

std::string shown(const std::optional<std::string>& text, std::string_view fallback) {
    return text && !text->empty() ? *text : std::string(fallback);
}

std::string shown(const std::optional<std::int64_t>& number, std::string_view fallback) {
    return number ? std::to_string(*number) : std::string(fallback);
}

std::string percent_text(double fraction) {
    return format_fixed(fraction * 100, fraction * 100 < 1 ? 1 : 0) + "%";
}

std::string plural(long count, std::string_view singular, std::string_view many) {
    return std::to_string(count) + " " + std::string(count == 1 ? singular : many);
}

std::string settings_summary(const Json& settings, const std::vector<std::string>& keys) {
    std::string summary;
    for (const auto& key : keys) {
        const Json& value = field(settings, key);
        if (value.is_null()) continue;
        if (!summary.empty()) summary += ' ';
        summary += key + "=" + format_setting_value(value);
    }
    return summary;
}

std::size_t display_width(std::string_view utf8) {
    // Count every byte that does not continue a multi-byte sequence.
    return static_cast<std::size_t>(std::count_if(utf8.begin(), utf8.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
}

Table::Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

void Table::add_row(std::vector<std::string> cells) {
    cells.resize(columns_.size());
    rows_.push_back(std::move(cells));
}

std::string Table::render() const {
    std::vector<std::size_t> widths(columns_.size());
    for (std::size_t c = 0; c < columns_.size(); ++c) {
        widths[c] = display_width(columns_[c].header);
        for (const auto& row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
    }
    auto render_line = [&](auto cell_at) {
        std::string line;
        for (std::size_t c = 0; c < columns_.size(); ++c) {
            const std::string& cell = cell_at(c);
            if (c > 0) line += "  ";
            line += columns_[c].align == Align::kRight ? pad_left(cell, widths[c])
                                                       : pad_right(cell, widths[c]);
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        return line + "\n";
    };
    std::string text =
        render_line([&](std::size_t c) -> const std::string& { return columns_[c].header; });
    for (const auto& row : rows_) {
        text += render_line([&](std::size_t c) -> const std::string& { return row[c]; });
    }
    return text;
}

std::string csv_field(std::string_view text) {
    if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
    std::string quoted = "\"";
    for (char c : text) {
        if (c == '"') quoted += '"';
        quoted += c;
    }
    return quoted + "\"";
}

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "-";
    long total = std::lround(seconds);
    char buffer[32];
    if (total < 60) {
        std::snprintf(buffer, sizeof buffer, "%lds", total);
    } else if (total < 3600) {
        std::snprintf(buffer, sizeof buffer, "%ldm%02lds", total / 60, total % 60);
    } else {
        std::snprintf(buffer, sizeof buffer, "%ldh%02ldm", total / 3600, (total % 3600) / 60);
    }
    return buffer;
}

}  // namespace ds::hostctl
