#include "daemon/compare/durability_results.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "common/json_fields.h"
#include "common/workload_kind.h"

namespace ds {
namespace {

using json_read::field;

// No stored count is believed beyond this: a record claiming more is
// damaged, not big.
constexpr long long kMaxStoredCount = 1'000'000'000;
// Longest model name kept from a record (a name, not a text).
constexpr std::size_t kMaxModelName = 40;

// object[key] as an integer in [0, most], or nothing.
std::optional<long long> count_at(const Json& object, const char* key, long long most) {
    const Json& value = field(object, key);
    if (value.is_number_unsigned()) {
        const auto count = value.get<unsigned long long>();
        if (count > static_cast<unsigned long long>(most)) return std::nullopt;
        return static_cast<long long>(count);
    }
    if (!value.is_number_integer()) return std::nullopt;
    const auto count = value.get<long long>();
    if (count < 0 || count > most) return std::nullopt;
    return count;
}

std::optional<bool> flag_at(const Json& object, const char* key) {
    const Json& value = field(object, key);
    if (!value.is_boolean()) return std::nullopt;
    return value.get<bool>();
}

// A summary stored before repairs were tried: after repair as before it.
DurabilitySummary without_repairs(DurabilitySummary summary) {
    summary.states_with_losses_after_repair = summary.states_with_losses;
    summary.max_lost_after_repair = summary.max_lost;
    summary.mean_lost_after_repair = summary.mean_lost;
    return summary;
}

// The stored summary's repair counts, when all are there, in range and
// agree with each other and with the counts before repair.
bool read_repair_counts(const Json& stored, DurabilitySummary& summary) {
    const auto repaired = count_at(stored, "states_repaired", summary.mount_failures);
    if (!repaired) return false;
    const auto remounted = count_at(stored, "mounted_after_repair", *repaired);
    const auto with_losses =
        count_at(stored, "states_with_losses_after_repair", summary.states_with_losses);
    const auto max_lost = count_at(stored, "max_lost_after_repair", summary.max_lost);
    const auto mean_lost = json_read::number_field(stored, "mean_lost_after_repair");
    if (!remounted || !with_losses || !max_lost || !mean_lost || *mean_lost < 0 ||
        *mean_lost > static_cast<double>(*max_lost) || (*with_losses == 0) != (*max_lost == 0))
        return false;
    summary.states_repaired = static_cast<int>(*repaired);
    summary.mounted_after_repair = static_cast<int>(*remounted);
    summary.states_with_losses_after_repair = static_cast<int>(*with_losses);
    summary.max_lost_after_repair = *max_lost;
    summary.mean_lost_after_repair = *mean_lost;
    return true;
}

// The record's own "summary", when every count is there, in range, and the
// counts agree with each other (a record that contradicts itself is not
// believed).
std::optional<DurabilitySummary> stored_summary(const Json& record) {
    const Json& stored = field(record, "summary");
    const auto states = count_at(stored, "crash_states", kMaxStoredCount);
    if (!states) return std::nullopt;
    DurabilitySummary summary;
    summary.crash_states = static_cast<int>(*states);
    const std::pair<const char*, int*> counts[] = {
        {"mount_failures", &summary.mount_failures},
        {"fsck_failures", &summary.fsck_failures},
        {"recovery_failures", &summary.recovery_failures},
        {"states_with_losses", &summary.states_with_losses}};
    for (const auto& [key, into] : counts) {
        const auto count = count_at(stored, key, *states);
        if (!count) return std::nullopt;
        *into = static_cast<int>(*count);
    }
    const auto max_lost = count_at(stored, "max_lost", kMaxStoredCount);
    const auto mean_lost = json_read::number_field(stored, "mean_lost");
    if (!max_lost || !mean_lost || *mean_lost < 0 || *mean_lost > static_cast<double>(*max_lost))
        return std::nullopt;
    if ((summary.states_with_losses == 0) != (*max_lost == 0)) return std::nullopt;
    summary.max_lost = *max_lost;
    summary.mean_lost = *mean_lost;
    if (!stored.contains("states_repaired")) return without_repairs(summary);
    if (!read_repair_counts(stored, summary)) return std::nullopt;
    return summary;
}

// A stored state's "lost_after_repair" and "repair" (absent before repairs
// were tried: then as lost); false when present but not readable.
bool read_stored_repair(const Json& state, CrashStateResult& result) {
    const Json& repair = field(state, "repair");
    if (!state.contains("lost_after_repair") || repair.is_null()) {
        result.lost_after_repair = result.lost;
        return true;
    }
    const auto lost = count_at(state, "lost_after_repair", kMaxStoredCount);
    const auto mounted = flag_at(repair, "mounted");
    if (!lost || !mounted) return false;
    result.lost_after_repair = *lost;
    result.check.repair.tried = true;
    result.check.repair.mounted = *mounted;
    return true;
}

// The summary of the record's "states", when there are some and every one
// reads (an empty list beside a summary that does not read tells nothing).
std::optional<DurabilitySummary> summary_of_states(const Json& record) {
    const Json& states = field(record, "states");
    if (!states.is_array() || states.empty() ||
        states.size() > static_cast<std::size_t>(kMaxStoredCount))
        return std::nullopt;
    std::vector<CrashStateResult> results;
    for (const Json& state : states) {
        const auto lost = count_at(state, "lost", kMaxStoredCount);
        const auto mounted = flag_at(state, "mounted");
        const auto fsck_clean = flag_at(state, "fsck_clean");
        const auto recovered = flag_at(state, "recovered");
        if (!lost || !mounted || !fsck_clean || !recovered) return std::nullopt;
        CrashStateResult result;
        result.lost = *lost;
        result.check.mounted = *mounted;
        result.check.fsck_clean = *fsck_clean;
        result.check.recovered = *recovered;
        if (!read_stored_repair(state, result)) return std::nullopt;
        results.push_back(result);
    }
    return summarize(results);
}

void add_distinct(std::vector<std::string>& list, const std::string& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
}

double seconds_at(const Json& record, const char* key) {
    const auto seconds = json_read::number_field(record, key);
    return seconds && *seconds >= 0 ? *seconds : 0;
}

}  // namespace

void DurabilityResult::add(const RunRecord& run) {
    if (run.superseded_by != 0 || run.status != RunStatus::kSucceeded) return;
    const Json& record = field(run.applied_settings, "durability");
    if (record.is_null()) return;
    add_distinct(workloads_, run.workload_name);
    if (const auto found = run.metrics.find("commits_per_s");
        found != run.metrics.end() && std::isfinite(found->second)) {
        commits_sum_ += found->second;
        ++commits_runs_;
    }
    std::optional<DurabilitySummary> summary = stored_summary(record);
    if (!summary) summary = summary_of_states(record);
    if (!summary) {
        ++unreadable_runs_;
        return;
    }
    ++runs_;
    worst_.add(*summary);
    add_host_writeback(record, *summary);
    if (const std::string model = json_read::string_or_empty(record, "model"); !model.empty())
        add_distinct(models_, model.substr(0, kMaxModelName));
    volatile_cache_runs_ += flag_at(record, "volatile_cache").value_or(false) ? 1 : 0;
    if (const ServerSettingsRules* rules =
            kind_server_settings(run.workload.kind, run.workload.params))
        add_distinct(server_ledgers_, std::string(rules->ledger_variant));
    images_s_ += seconds_at(record, "images_s");
    check_s_ += seconds_at(record, "check_s");
}

void DurabilityResult::StateSums::add(const DurabilitySummary& run) {
    lost_total += run.mean_lost * run.crash_states;
    lost_after_repair_total += run.mean_lost_after_repair * run.crash_states;
    summary.crash_states += run.crash_states;
    summary.mount_failures += run.mount_failures;
    summary.fsck_failures += run.fsck_failures;
    summary.recovery_failures += run.recovery_failures;
    summary.states_with_losses += run.states_with_losses;
    summary.max_lost = std::max(summary.max_lost, run.max_lost);
    summary.states_repaired += run.states_repaired;
    summary.mounted_after_repair += run.mounted_after_repair;
    summary.states_with_losses_after_repair += run.states_with_losses_after_repair;
    summary.max_lost_after_repair =
        std::max(summary.max_lost_after_repair, run.max_lost_after_repair);
    const double states = summary.crash_states;
    summary.mean_lost = states > 0 ? lost_total / states : 0;
    summary.mean_lost_after_repair = states > 0 ? lost_after_repair_total / states : 0;
}

void DurabilityResult::StateSums::merge(const StateSums& other) {
    // The other's exact totals, not its means times its states.
    DurabilitySummary counts = other.summary;
    counts.mean_lost = 0;
    counts.mean_lost_after_repair = 0;
    lost_total += other.lost_total;
    lost_after_repair_total += other.lost_after_repair_total;
    add(counts);
}

void DurabilityResult::add_host_writeback(const Json& record, const DurabilitySummary& worst_case) {
    const Json& writeback = field(record, "host_writeback");
    const std::optional<double> window = json_read::number_field(writeback, "window_s");
    std::optional<DurabilitySummary> measured;
    if (window && std::isfinite(*window) && *window >= 0) {
        measured = stored_summary(writeback);
        if (!measured) measured = summary_of_states(writeback);
    }
    if (measured) {
        ++writeback_runs_;
        if (std::find(windows_.begin(), windows_.end(), *window) == windows_.end())
            windows_.push_back(*window);
    }
    writeback_.add(measured.value_or(worst_case));
}

void DurabilityResult::merge(const DurabilityResult& other) {
    worst_.merge(other.worst_);
    writeback_.merge(other.writeback_);
    writeback_runs_ += other.writeback_runs_;
    for (double window : other.windows_)
        if (std::find(windows_.begin(), windows_.end(), window) == windows_.end())
            windows_.push_back(window);
    runs_ += other.runs_;
    unreadable_runs_ += other.unreadable_runs_;
    volatile_cache_runs_ += other.volatile_cache_runs_;
    for (const std::string& variant : other.server_ledgers_) add_distinct(server_ledgers_, variant);
    commits_sum_ += other.commits_sum_;
    commits_runs_ += other.commits_runs_;
    images_s_ += other.images_s_;
    check_s_ += other.check_s_;
    for (const std::string& model : other.models_) add_distinct(models_, model);
    for (const std::string& workload : other.workloads_) add_distinct(workloads_, workload);
}

bool DurabilityResult::safe(const DurabilitySummary& sum) const {
    return runs_ > 0 && unreadable_runs_ == 0 && sum.crash_states > 0 &&
           sum.states_with_losses == 0 && sum.states_with_losses_after_repair == 0 &&
           sum.mount_failures == 0 && sum.fsck_failures == 0 && sum.recovery_failures == 0;
}

bool DurabilityResult::safe() const {
    return safe(worst_.summary);
}

std::string DurabilityResult::verdict() const {
    if (!measured()) return "not measured";
    std::string text = runs_ == 0                         ? std::string()
                       : worst_.summary.crash_states == 0 ? std::string("no crash state tried")
                                                          : worst_.summary.verdict();
    if (unreadable_runs_ > 0) {
        text += (text.empty() ? "" : "; ") + std::to_string(unreadable_runs_) +
                (unreadable_runs_ == 1 ? " run's" : " runs'") + " durability record unreadable";
    }
    return text;
}

double DurabilityResult::commits_per_s() const {
    return commits_runs_ > 0 ? commits_sum_ / commits_runs_ : std::nan("");
}

Json DurabilityResult::to_json() const {
    Json json{{"verdict", verdict()},
              {"safe", safe()},
              {"runs", runs_},
              {"unreadable_runs", unreadable_runs_}};
    if (!measured()) return json;
    json.update(worst_.summary.to_json());
    json["verdict"] = verdict();  // the summary's own ignores unreadable runs
    json["commits_per_s"] = commits_runs_ > 0 ? Json(commits_per_s()) : Json(nullptr);
    json["models"] = models_;
    json["volatile_cache"] = volatile_cache();
    json["images_s"] = images_s_;
    json["check_s"] = check_s_;
    json["measured_by"] = workloads_;
    if (host_writeback_measured()) {
        Json writeback = writeback_.summary.to_json();
        writeback["runs"] = writeback_runs_;
        writeback["safe"] = safe(writeback_.summary);
        writeback["window_s"] = windows_.size() == 1 ? Json(windows_.front()) : Json(nullptr);
        json["host_writeback"] = std::move(writeback);
    }
    return json;
}

bool measurement_covers(const DurabilityResult& result, std::string_view risk) {
    if (result.runs() == 0) return false;
    const auto& models = result.models();
    if (risk == "cache=unsafe")
        return std::find(models.begin(), models.end(), kHostPowerCutModel) != models.end();
    if (risk == "barrier=0" || risk == "nobarrier") return result.volatile_cache();
    if (risk == "data=writeback" || risk.starts_with("no journal")) return true;
    if (const ServerSettingsRules* rules = rules_of_server_settings_risk(risk))
        return result.measured_server_ledger(rules->ledger_variant);
    return false;
}

std::vector<bool> pareto_front(const std::vector<std::pair<double, double>>& speed_loss) {
    const auto usable = [](const std::pair<double, double>& point) {
        return std::isfinite(point.first) && std::isfinite(point.second);
    };
    std::vector<bool> front(speed_loss.size(), false);
    for (std::size_t i = 0; i < speed_loss.size(); ++i) {
        if (!usable(speed_loss[i])) continue;
        // Not a structured binding: clang 14 (the sanitizer and fuzz
        // builds) cannot capture one in a lambda.
        const double speed = speed_loss[i].first;
        const double loss = speed_loss[i].second;
        front[i] = std::none_of(speed_loss.begin(), speed_loss.end(), [&](const auto& other) {
            return usable(other) && other.first >= speed && other.second <= loss &&
                   (other.first > speed || other.second < loss);
        });
    }
    return front;
}

}  // namespace ds
