#include "common/compare_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "common/settings.h"
#include "common/text.h"

namespace ds {

using namespace json_read;

namespace {
constexpr int kMaxDecimals = 6;
}  // namespace

std::string format_fixed(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    std::string text = buffer;
    if (text.front() == '-' && text.find_first_not_of("-0.") == std::string::npos) {
        text.erase(0, 1);
    }
    return text;
}

std::string seconds_text(double seconds) {
    return format_fixed(seconds, seconds == std::floor(seconds) ? 0 : 1) + " s";
}

MeanSpread format_mean_spread(double mean, std::optional<double> stddev) {
    if (stddev && std::isfinite(*stddev) && *stddev > 0) {
        int exponent = static_cast<int>(std::floor(std::log10(*stddev)));
        int decimals = std::clamp(1 - exponent, 0, kMaxDecimals);
        return {format_fixed(mean, decimals), format_fixed(*stddev, decimals)};
    }
    int decimals = 0;
    if (mean != 0 && std::isfinite(mean)) {
        int exponent = static_cast<int>(std::floor(std::log10(std::fabs(mean))));
        decimals = std::clamp(3 - exponent, 0, kMaxDecimals);
    }
    MeanSpread result{format_fixed(mean, decimals), ""};
    if (stddev && *stddev == 0) result.spread = "0";
    return result;
}

std::string format_mean_stddev(double mean, std::optional<double> stddev) {
    MeanSpread parts = format_mean_spread(mean, stddev);
    return parts.spread.empty() ? parts.mean : parts.mean + " ± " + parts.spread;
}

std::string format_setting_value(const Json& value) {
    if (value.is_string()) return value.get<std::string>();
    if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
    if (value.is_null()) return "";
    if (value.is_object() && value.contains("type")) return filesystem_shorthand(value);
    return value.dump();
}

std::string setting_text(const Json& settings, const std::string& key) {
    const Json& value = field(settings, key);
    if (value.is_null() && settings.is_object()) {
        if (const AxisDef* axis = find_axis(key);
            axis &&
            (axis->kind == AxisKind::kDefaultOrCount || axis->kind == AxisKind::kDefaultOrSize))
            return std::string(axis->default_value);
        if (key == "scheduler") return "default";
    }
    return text_of(value);
}

std::string unsuccessful_note(const Json& runs) {
    std::vector<std::string> parts;
    if (long failed = integer_field(runs, "failed"); failed > 0)
        parts.push_back(std::to_string(failed) + " failed");
    if (long timed_out = integer_field(runs, "timed_out"); timed_out > 0)
        parts.push_back(std::to_string(timed_out) + " timed out");
    return parts.empty() ? "" : " (" + join(parts, ", ") + ")";
}

std::string mean_ci_text(const Json& summary) {
    auto mean = number_field(summary, "mean");
    if (!mean || integer_field(summary, "n", 0) <= 0) return "-";
    auto high = number_field(summary, "ci95_high");
    return format_mean_stddev(*mean, high ? std::optional<double>(*high - *mean) : std::nullopt);
}

std::string ratio_text(const Json& versus) {
    auto ratio = number_field(versus, "ratio");
    if (!ratio) return "-";
    auto low = number_field(versus, "ci95_low");
    auto high = number_field(versus, "ci95_high");
    std::string text = format_fixed(*ratio, 3);
    if (low && high) text += " [" + format_fixed(*low, 3) + ", " + format_fixed(*high, 3) + "]";
    return text;
}

std::string verdict_text(const Json& row) {
    if (field(row, "is_baseline") == true) return "baseline";
    if (field(row, "host_baseline") == true) return "-";
    return text_field(field(row, "vs_baseline"), "verdict");
}

namespace {

// "H/N" of a summary: crash states with a loss / crash states.
std::string lost_fraction(const Json& summary) {
    return std::to_string(integer_field(summary, "states_with_losses")) + "/" +
           std::to_string(integer_field(summary, "crash_states"));
}

// "lost 0/16 (host writeback 35 s) · worst ", or "" without that figure.
std::string host_writeback_prefix(const Json& durability) {
    const Json& writeback = field(durability, "host_writeback");
    if (integer_field(writeback, "crash_states") <= 0) return "";
    const auto window = number_field(writeback, "window_s");
    std::string text = "lost " + lost_fraction(writeback) + " (host writeback " +
                       (window ? seconds_text(*window) : "windows differ") + ")";
    if (integer_field(writeback, "states_with_losses") > 0)
        text.insert(text.size() - 1, ", ≤" + text_field(writeback, "max_lost"));
    return text + " · worst ";
}

}  // namespace

std::string durability_cell_text(const Json& durability) {
    const long runs = integer_field(durability, "runs");
    const long unreadable = integer_field(durability, "unreadable_runs");
    if (runs <= 0 && unreadable <= 0) return "not measured";
    std::vector<std::string> parts;
    if (runs > 0) {
        const long states = integer_field(durability, "crash_states");
        const long with_losses = integer_field(durability, "states_with_losses");
        const std::string writeback = host_writeback_prefix(durability);
        std::string lost = writeback.empty() ? lost_fraction(durability) + " lost"
                                             : writeback + lost_fraction(durability);
        if (with_losses > 0) lost += " (≤" + text_field(durability, "max_lost") + ")";
        parts.push_back(states > 0 ? lost : "no crash state");
    }
    const std::pair<const char*, const char*> failures[] = {{"mount_failures", " no mount"},
                                                            {"fsck_failures", " fsck"},
                                                            {"recovery_failures", " no recovery"},
                                                            {"unreadable_runs", " unreadable"}};
    for (const auto& [key, what] : failures)
        if (const long count = integer_field(durability, key); count > 0)
            parts.push_back(std::to_string(count) + what);
    return join(parts, ", ");
}

bool durability_safe(const Json& durability) {
    return field(durability, "safe") == true;
}

bool any_durability_measured(const Json& compare) {
    for (const Json& row : field(compare, "rows")) {
        const Json& durability = field(row, "durability");
        if (integer_field(durability, "runs") > 0 ||
            integer_field(durability, "unreadable_runs") > 0)
            return true;
    }
    return false;
}

std::string partition_text(const Json& partition) {
    static const std::vector<std::pair<const char*, const char*>> kParts = {
        {"accel", ""},           {"host", "host "},     {"qemu", "QEMU "},
        {"libvirt", "libvirt "}, {"kernel", "kernel "}, {"proxmox", "Proxmox VE "}};
    std::vector<std::string> parts;
    for (const auto& [key, label] : kParts) {
        const std::string value = text_field(partition, key, "");
        if (!value.empty()) parts.push_back(label + value);
    }
    return parts.empty() ? "versions not recorded" : join(parts, ", ");
}

std::vector<std::size_t> ranked_rows(const Json& compare) {
    const Json& rows = field(compare, "rows");
    const std::size_t count = rows.is_array() ? rows.size() : 0;
    std::vector<std::size_t> order;
    for (const auto& entry : field(compare, "ranking")) {
        auto index = number_field(entry, "row");
        if (index && *index >= 0 && static_cast<std::size_t>(*index) < count)
            order.push_back(static_cast<std::size_t>(*index));
    }
    for (std::size_t r = 0; r < count; ++r)
        if (std::find(order.begin(), order.end(), r) == order.end()) order.push_back(r);
    return order;
}

NarrowColumns narrow_columns(const Json& compare) {
    NarrowColumns columns;
    columns.axes = string_list(field(compare, "varying_axes"));
    std::set<std::string> workloads, options;
    for (const auto& row : field(compare, "rows")) {
        workloads.insert(text_field(row, "workload"));
        options.insert(text_field(row, "options", "defaults"));
    }
    columns.workload = workloads.size() > 1;
    columns.options = options.size() > 1;
    return columns;
}

std::string baseline_settings_text(const Json& compare) {
    for (const auto& row : field(compare, "rows")) {
        if (field(row, "is_baseline") != true) continue;
        std::vector<std::string> settings;
        for (const auto& axis : string_list(field(compare, "varying_axes")))
            settings.push_back(axis + "=" + setting_text(field(row, "settings"), axis));
        return settings.empty() ? text_field(row, "config_id").substr(0, 12) : join(settings, " ");
    }
    return "-";
}

}  // namespace ds
