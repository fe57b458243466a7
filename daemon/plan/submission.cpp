#include "daemon/plan/submission.h"

#include <algorithm>
#include <set>

#include "common/clock.h"
#include "common/compare_text.h"
#include "common/text.h"
#include "common/workload_kind.h"
#include "daemon/plan/expand.h"
#include "daemon/plan/rounds.h"

namespace ds {

Result<SweepSubmission> plan_submission(std::string_view spec_text, std::string_view source,
                                        const SweepTimeouts& defaults) {
    DS_ASSIGN_OR_RETURN(auto spec, parse_sweep_spec(spec_text, source));
    return plan_submission(spec, spec_text, source, defaults);
}

Result<SweepSubmission> plan_submission(const SweepSpec& spec, std::string_view spec_text,
                                        std::string_view source, const SweepTimeouts& defaults) {
    auto plan = expand_sweep(spec);
    if (!plan.ok()) return plan.error();

    SweepSubmission submission;
    submission.pinned_hosts = spec.hosts;
    submission.identical_hosts = spec.identical_hosts;
    submission.max_rounds = spec.max_repetitions;
    submission.min_runs_for_verdict = spec.verdict_rules.min_runs;
    submission.timeouts = defaults;
    if (spec.boot_timeout_s > 0) submission.timeouts.boot_timeout_s = spec.boot_timeout_s;
    if (spec.run_timeout_s > 0) submission.timeouts.run_timeout_s = spec.run_timeout_s;

    SweepRecord& sweep = submission.sweep;
    sweep.name = spec.name;
    sweep.spec_toml = std::string(spec_text);
    sweep.spec_source = std::string(source);
    sweep.status = SweepStatus::kQueued;
    sweep.created_at = utc_now_iso8601();
    sweep.total_runs = static_cast<int>(plan->runs.size());
    sweep.dropped = Json::array();
    for (const auto& dropped : plan->dropped) {
        sweep.dropped.push_back({{"settings", dropped.settings}, {"reason", dropped.reason}});
    }
    sweep.varying_axes = plan->varying_axes;
    submission.skipped_pairs = plan->skipped_pairs;
    std::set<ImageChoice> images;
    for (const auto& workload : plan->workloads)
        images.insert({spec.guest_suite, std::string(image_variant_for_kind(workload.kind))});
    submission.images.assign(images.begin(), images.end());

    for (const auto& planned : plan->runs) {
        submission.runs.push_back(planned_run_record(plan.value(), planned));
    }
    return submission;
}

bool boots_project_image(const SweepSubmission& submission) {
    return std::any_of(submission.runs.begin(), submission.runs.end(), [](const RunRecord& run) {
        const HypervisorKindDef* kind = find_hypervisor_kind(run.config.hypervisor);
        return kind == nullptr || kind->boots_project_image;
    });
}

Status check_backends(const SweepSubmission& submission, const BackendCatalog& backends) {
    std::set<std::string> checked;
    for (const auto& run : submission.runs) {
        if (!checked.insert(run.config_id).second) continue;
        Status usable = backends.check(run.config, submission.pinned_hosts);
        if (!usable.ok()) {
            return make_error(usable.error().code, "cannot run sweep '" + submission.sweep.name +
                                                       "': " + usable.error().message);
        }
    }
    return ok_status();
}

namespace {

// The hosts a configuration's runs may go to, in configuration order.
std::vector<std::string> eligible_hosts(const StorageConfig& config,
                                        const SweepSubmission& submission,
                                        const BackendCatalog& backends) {
    std::vector<std::string> names;
    for (const HostDescription& host : backends.hosts()) {
        if (host.takes(config, submission.pinned_hosts)) names.push_back(host.name);
    }
    return names;
}

}  // namespace

std::vector<std::string> placement_warnings(const SweepSubmission& submission,
                                            const BackendCatalog& backends) {
    if (submission.identical_hosts) return {};
    std::vector<std::string> widest;
    std::set<std::string> checked;
    for (const auto& run : submission.runs) {
        if (!checked.insert(run.config_id).second) continue;
        std::vector<std::string> hosts = eligible_hosts(run.config, submission, backends);
        if (hosts.size() > widest.size()) widest = std::move(hosts);
    }
    const int host_count = static_cast<int>(widest.size());
    const int rounds = submission.max_rounds;
    const int needed = submission.min_runs_for_verdict;
    if (host_count < 2 || rounds >= host_count * needed) return {};
    return {"the sweep's " + std::to_string(rounds) + " round(s) may spread over " +
            std::to_string(host_count) + " hosts (" + join(widest, ", ") +
            "): each round runs on one host and compare keeps hosts apart, so each host gets "
            "about " +
            format_fixed(static_cast<double>(rounds) / host_count, 1) +
            " round(s), and a verdict on a host needs " + std::to_string(needed) +
            " rounds there; ask for at least " + std::to_string(host_count * needed) +
            " repetitions, pin a host ([hypervisor] hosts = [\"" + widest.front() +
            "\"]), or say identical_hosts = true if the hosts are alike"};
}

}  // namespace ds
