#include "daemon/run/verify_phase.h"

#include <utility>

#include "common/text.h"

namespace ds {
namespace {

// The checks by effect that could not be made (discard's trim, a throttle
// limit's rate), as settings not checked: reported, never hidden
// (docs/verification.md).
void add_effects_not_checked(const Json& applied, const TrimPhase* trim,
                             std::vector<NotChecked>& not_checked) {
    constexpr const char* kLevel = "effect on the run";
    if (trim) {
        if (std::optional<NotChecked> trimmed = trim->not_checked())
            not_checked.push_back(*trimmed);
    }
    const Json& throttle = applied.value("throttle_effect", Json());
    if (!throttle.is_object()) return;
    for (const auto& [setting, record] : throttle.items()) {
        if (!record.is_object()) continue;
        if (record.value("checked", true) == false) {
            not_checked.push_back({kLevel, setting, record.value("reason", "")});
            continue;
        }
        const Json& lower = record.value("lower", Json());
        if (lower.is_object() && lower.value("checked", true) == false) {
            not_checked.push_back(
                {kLevel, setting, "a lower limit than asked: " + lower.value("reason", "")});
        }
    }
}

}  // namespace

std::optional<ThrottleRates> unthrottled_reference(Store* store, std::int64_t sweep_id,
                                                   const StorageConfig& config,
                                                   const std::string& workload_name,
                                                   const std::string& host) {
    if (store == nullptr || sweep_id == 0) return std::nullopt;
    auto aggregates = store->metric_aggregates(sweep_id);
    if (!aggregates.ok()) return std::nullopt;
    const std::string twin = config_id(unthrottled_twin(config));
    std::map<std::string, double> means;
    for (const MetricAggregate& aggregate : *aggregates) {
        if (aggregate.config_id != twin || aggregate.workload_name != workload_name) continue;
        // The partition key is [accel, host, qemu, libvirt, kernel, proxmox] (store.h):
        // a twin measured on another host says nothing of this one's disk.
        const Json partition = Json::parse(aggregate.partition_key, nullptr, false);
        if (!partition.is_array() || partition.size() < 2 || partition[1] != host) continue;
        means[aggregate.metric] = aggregate.moments.mean;
    }
    if (means.empty()) return std::nullopt;
    return throttle_rates_of(means);
}

Status VerifyPhase::verify(Json& applied, const Json& readback,
                           const std::map<std::string, double>& metrics, const TrimPhase* trim,
                           const UnthrottledReference& unthrottled) const {
    applied["guest"] = readback;
    auto [mismatches, not_checked] =
        verify_applied_settings(*config_, *workload_, applied["hypervisor"], readback);
    if (trim && !trim->mismatch().empty()) mismatches.push_back(trim->mismatch());
    judge_throttle(applied, metrics, unthrottled, mismatches);
    add_effects_not_checked(applied, trim, not_checked);
    applied["verification"] = verification_record(not_checked, policy_);
    std::vector<std::string> unchecked;
    for (const NotChecked& entry : not_checked)
        if (fails_run(entry, policy_)) unchecked.push_back(not_checked_line(entry));
    applied["verified"] = mismatches.empty() && unchecked.empty();
    std::vector<std::string> parts;
    if (!mismatches.empty()) parts.push_back("settings not in force: " + join(mismatches, "; "));
    if (!unchecked.empty()) {
        parts.push_back("settings not verified (unchecked_levels = \"" +
                        std::string(to_string(policy_)) + "\"): " + join(unchecked, "; "));
    }
    if (!parts.empty()) return make_error(errc::kSettingsMismatch, join(parts, "; "));
    return ok_status();
}

void VerifyPhase::judge_throttle(Json& applied, const std::map<std::string, double>& metrics,
                                 const UnthrottledReference& unthrottled,
                                 std::vector<std::string>& mismatches) const {
    if (!config_->iops_limit && !config_->bandwidth_limit) return;
    // fio's and the agent's engine's `direct` (a flag: true or 1).
    const Json direct = workload_->params.is_object()
                            ? workload_->params.value("direct", Json(false))
                            : Json(false);
    const WorkloadIo io =
        direct == true || direct == 1 ? WorkloadIo::kDirect : WorkloadIo::kBuffered;
    ThrottleVerdict verdict =
        judge_throttle_effect(*config_, io, throttle_rates_of(metrics), unthrottled());
    applied["throttle_effect"] = std::move(verdict.record);
    for (std::string& line : verdict.mismatches) mismatches.push_back(std::move(line));
}

}  // namespace ds
