// How a comparison (the JSON of GET /v1/sweeps/ID/compare, docs/api.md)
// reads as text: the cells that hostctl's compare table and the daemon's
// HTML report both show, so the two say the same thing the same way. Every
// function is pure and tolerant: it reads JSON that may come from an older or
// newer daemon, never throws on a missing or mistyped field, and shows "-"
// for what is absent.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_fields.h"

namespace ds {

using Json = nlohmann::json;

// `value` with `decimals` decimals; never "-0" or "-0.00" (rounding can leave
// them, and they read like a real sign).
std::string format_fixed(double value, int decimals);
// "35 s", "0.5 s": whole seconds without decimals, else one.
std::string seconds_text(double seconds);

// "mean ± stddev" rounded to the spread: as many decimals as give the stddev
// two significant digits, the mean to the same decimal place (1234.56 ± 45.6
// → "1235 ± 46", 3.3123 ± 0.1234 → "3.31 ± 0.12"); integer digits are never
// rounded away (183500 ± 20412.5 → "183500 ± 20412"). Without a spread (a
// single run: the API sends null) the mean alone, to four significant digits,
// so the n column tells the reader there is no spread to show.
struct MeanSpread {
    std::string mean;
    std::string spread;  // empty when there is no stddev
};
MeanSpread format_mean_spread(double mean, std::optional<double> stddev);
std::string format_mean_stddev(double mean, std::optional<double> stddev);

// A setting's value as a user writes it in a spec: strings bare, booleans
// true/false, a filesystem object as its shorthand, numbers as given,
// anything else as compact JSON.
std::string format_setting_value(const Json& value);

// A setting of a configuration's JSON for a column: block-layer axes left at
// their default are absent from the JSON and read "default".
std::string setting_text(const Json& settings, const std::string& key);

// " (1 failed, 2 timed out)" for a row's run counts, "" when none.
std::string unsuccessful_note(const Json& runs);

// "3035 ± 55": a metric summary's mean with its 95% CI half-width, rounded
// to the half-width; "3035" for a single run; "-" without a mean.
std::string mean_ci_text(const Json& summary);
// "1.091 [1.020, 1.170]" of a row's "vs_baseline"; the ratio alone without
// an interval; "-" without a ratio.
std::string ratio_text(const Json& versus);
// "baseline", "-" for a host baseline, else the row's vs_baseline verdict.
std::string verdict_text(const Json& row);
// A row's "durability" (ds::DurabilityResult::to_json) as a short cell:
// "0/50 lost", "7/50 lost (≤12)" (crash states with a loss / crash states,
// the most lost in one), then the failures ", 2 no mount", ", 3 fsck",
// ", 1 no recovery", ", 1 unreadable" (runs whose record did not read);
// "no crash state" when none was tried; "not measured" without durability
// runs (or without the field: an older daemon). With a host-writeback
// figure (cache unsafe, writeback: its "host_writeback"), that one first and
// the worst case beside it: "lost 0/16 (host writeback 35 s) · worst 13/16
// (≤300), 7 no mount".
std::string durability_cell_text(const Json& durability);
// Whether the row's durability was measured and found safe (no loss, no
// failure, every record read): the daemon's "safe", never inferred.
bool durability_safe(const Json& durability);
// Whether any row of a comparison has durability runs: only then do the
// compare table and the report show durability.
bool any_durability_measured(const Json& compare);
// What the durability cell says, for a line under a table.
inline constexpr const char* kDurabilityLegend =
    "durability = crash states that lost acknowledged commits / crash states tried (≤ the most "
    "lost in one), then failed mounts, fsck, recoveries: simulated power cuts "
    "(docs/durability.md); host writeback W s: writes older than the host's writeback window "
    "survive, worst: any write since the workload began may be lost";

// "kvm, host pve1, QEMU 7.2.0, libvirt 9.0.0, kernel 6.1.0": what is recorded
// of a partition; "versions not recorded" when nothing is.
std::string partition_text(const Json& partition);

// The rows in the comparison's ranking order (partition, analysed metric,
// best first), then the rows without the analysed metric (no succeeded run),
// so failures stay visible. Indexes into "rows".
std::vector<std::size_t> ranked_rows(const Json& compare);

// The settings that tell a comparison's rows apart: its varying axes, plus
// the workload's name and its server variables when they vary.
struct NarrowColumns {
    std::vector<std::string> axes;
    bool workload = false;
    bool options = false;
};
NarrowColumns narrow_columns(const Json& compare);

// The baseline configuration as its varying settings ("filesystem=ext4
// cache=none"), its config id's first 12 digits when nothing varies, "-"
// when no row is the baseline.
std::string baseline_settings_text(const Json& compare);

}  // namespace ds
