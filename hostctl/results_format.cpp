#include "hostctl/results_format.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "common/verification_text.h"

namespace ds::hostctl {
namespace {

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// `value` into `out`, nested objects flattened to dotted keys below `prefix`.
void flatten_into(const std::string& prefix, const Json& value, KeyValues& out) {
    if (value.is_object() && !value.empty()) {
        for (const auto& item : value.items()) {
            flatten_into(prefix.empty() ? item.key() : prefix + "." + item.key(), item.value(),
                         out);
        }
    } else {
        out.emplace_back(prefix, single_line(format_setting_value(value)));
    }
}

// A run's object or array field as a section: its title, then its entries
// (an array's elements as "-" lines), keys aligned.
std::string run_section(const std::string& title, const Json& value) {
    KeyValues entries;
    if (value.is_object()) {
        flatten_into("", value, entries);
    } else {
        for (const auto& element : value) {
            entries.emplace_back("-", single_line(format_setting_value(element)));
        }
    }
    std::string text = title + ":\n";
    if (entries.empty()) text += "  (none)\n";
    std::size_t width = 0;
    for (const auto& [key, entry] : entries) width = std::max(width, display_width(key));
    for (const auto& [key, entry] : entries) {
        text += "  " + pad_right(key, width) + "  " + entry + "\n";
    }
    return text;
}

// A run's applied_settings.verification (docs/verification.md): each level
// or setting not checked as a "not checked: REASON" line, under the policy
// that judged them; "" for a run without the record (not verified, or an
// older daemon).
std::string not_checked_section(const Json& verification) {
    if (!verification.is_object()) return "";
    const std::string policy = text_field(verification, "policy");
    const std::vector<std::string> lines = not_checked_lines(field(verification, "not_checked"));
    std::string text = "verification (unchecked_levels = " + policy + "):";
    if (lines.empty()) return text + " nothing left unchecked\n";
    text += "\n";
    for (const std::string& line : lines) text += "  " + single_line(line) + "\n";
    return text;
}

}  // namespace

std::string format_run(const api::RunShowReply& reply) {
    if (!reply.run) return "no run in the daemon's answer\n";
    // Printed generically, key by key: a field absent from the reply is null
    // here, and a null field is not shown.
    const Json run = to_json(*reply.run);

    std::string text = "run " + text_field(run, "id") + " of sweep " + text_field(run, "sweep_id") +
                       ": " + text_field(run, "status") + "\n";
    // Scalars first, the important ones in a fixed order, then the rest.
    static const std::vector<std::string> kFirst = {
        "status",   "failure_reason", "config_id",  "workload_name", "repetition", "attempt",
        "sequence", "accel",          "started_at", "finished_at",   "vm_name",    "volume_name"};
    std::vector<std::pair<std::string, std::string>> scalars;
    std::set<std::string> shown = {"id", "sweep_id", "raw_output", "console_log"};
    auto add_scalar = [&](const std::string& key, const Json& value) {
        if (shown.count(key) || value.is_object() || value.is_array() || value.is_null()) return;
        shown.insert(key);
        scalars.emplace_back(key, single_line(format_setting_value(value)));
    };
    for (const auto& key : kFirst) add_scalar(key, field(run, key));
    for (const auto& item : run.items()) add_scalar(item.key(), item.value());
    std::size_t key_width = 0;
    for (const auto& [key, value] : scalars) key_width = std::max(key_width, key.size() + 1);
    for (const auto& [key, value] : scalars) {
        text += "  " + pad_right(key + ":", key_width) + " " + value + "\n";
    }

    text += not_checked_section(field(field(run, "applied_settings"), "verification"));
    // Objects as sections, nested objects flattened to dotted keys (the
    // verification record is the section above).
    for (const auto& item : run.items()) {
        if (shown.count(item.key())) continue;
        if (!item.value().is_object() && !item.value().is_array()) continue;
        Json value = item.value();
        if (item.key() == "applied_settings" && value.is_object()) value.erase("verification");
        text += run_section(item.key(), value);
    }
    for (const char* bulky : {"console_log", "raw_output"}) {
        const Json& value = field(run, bulky);
        if (value.is_string()) {
            text += std::string(bulky) + ": " +
                    std::to_string(value.get_ref<const std::string&>().size()) +
                    " bytes (hostctl --json results show " + text_field(run, "id") +
                    " prints it)\n";
        }
    }
    return text;
}

std::string format_apply(const api::ApplyReply& reply) {
    std::string snippet = reply.snippet.value_or("");
    if (!snippet.empty() && snippet.back() != '\n') snippet += '\n';
    return snippet;
}

}  // namespace ds::hostctl
