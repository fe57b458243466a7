// The text helpers every printer of hostctl shares: tables, widths, CSV
// fields, durations. Each family of the daemon's answers has its printers in
// a file of its own (sweep_format.h, submission_format.h, compare_format.h,
// results_format.h, sweep_progress.h, status_format.h). Every printer is
// pure: the daemon's answer in (its typed message of common/api/ where it
// has one, else the API's JSON as docs/api.md documents it), text out;
// nothing touches the terminal, so tests can check exact output. The
// printers tolerate missing or extra fields (older or newer daemons) and
// print "-" for what is absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/compare_text.h"
#include "common/json_fields.h"

namespace ds::hostctl {

using Json = nlohmann::json;

// Terminal columns taken by UTF-8 text: one per code point (the tables hold
// no double-width characters), so "±" counts as one, not two bytes.
std::size_t display_width(std::string_view utf8);

enum class Align { kLeft, kRight };

// A text table: a header row, then rows; columns separated by two spaces,
// padded to the widest cell, no trailing blanks.
class Table {
  public:
    struct Column {
        std::string header;
        Align align = Align::kLeft;
    };
    explicit Table(std::vector<Column> columns);
    // A row with fewer cells than columns is padded with empty cells.
    void add_row(std::vector<std::string> cells);
    bool empty() const { return rows_.empty(); }
    std::string render() const;

  private:
    std::vector<Column> columns_;
    std::vector<std::vector<std::string>> rows_;
};

// Field access that never throws, for every printer: the daemon may be older
// or newer than us (common/json_fields.h).
using json_read::field;
using json_read::integer_field;
using json_read::number_field;
using json_read::string_list;
using json_read::text_field;
using json_read::text_of;

// A field of a typed reply (common/api/) as the printers show it: text as
// it is, a number as JSON writes it; `fallback` when absent, and for ""
// (as text_of reads the raw JSON).
std::string shown(const std::optional<std::string>& text, std::string_view fallback = "-");
std::string shown(const std::optional<std::int64_t>& number, std::string_view fallback = "-");

// "mean ± stddev" rounded to the spread, and a setting's value as a spec
// writes it: common/compare_text.h (the daemon's HTML report shows the same).
using ds::format_mean_spread;
using ds::format_mean_stddev;
using ds::format_setting_value;
using ds::MeanSpread;

// One RFC 4180 field: quoted when it holds a comma, quote, CR or LF.
std::string csv_field(std::string_view text);

// Seconds as "45s", "2m05s", "1h02m".
std::string format_duration(double seconds);

// Failure reasons and messages can span lines; a table cell cannot.
std::string single_line(std::string text);

// `text` padded with blanks to `width` display columns, on the left or the
// right; as it is when it is as wide already.
std::string pad_left(const std::string& text, std::size_t width);
std::string pad_right(const std::string& text, std::size_t width);

// A fraction as a percentage: "2%" for 0.02, "0.5%" for 0.005 (a decimal
// below 1%).
std::string percent_text(double fraction);

// "1 run", "2 runs".
std::string plural(long count, std::string_view singular, std::string_view many);

// "k=v k=v" for the given keys of a settings object (absent keys left out).
std::string settings_summary(const Json& settings, const std::vector<std::string>& keys);

}  // namespace ds::hostctl
