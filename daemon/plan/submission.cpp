#include "daemon/plan/submission.h"

#include <algorithm>
#include <set>

#include "common/clock.h"
#include "common/workload_kind.h"
#include "daemon/plan/rounds.h"

namespace ds {

Result<SweepSubmission> plan_submission(std::string_view spec_text, std::string_view source,
                                        const SweepTimeouts& defaults) {
    auto spec = parse_sweep_spec(spec_text, source);
    if (!spec.ok()) return spec.error();
    auto plan = expand_sweep(spec.value());
    if (!plan.ok()) return plan.error();

    SweepSubmission submission;
    submission.pinned_hosts = spec->hosts;
    submission.timeouts = defaults;
    if (spec->boot_timeout_s > 0) submission.timeouts.boot_timeout_s = spec->boot_timeout_s;
    if (spec->run_timeout_s > 0) submission.timeouts.run_timeout_s = spec->run_timeout_s;

    SweepRecord& sweep = submission.sweep;
    sweep.name = spec->name;
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
    std::set<std::string> variants;
    for (const auto& workload : plan->workloads)
        variants.emplace(image_variant_for_kind(workload.kind));
    submission.image_variants.assign(variants.begin(), variants.end());

    for (const auto& planned : plan->runs) {
        submission.runs.push_back(planned_run_record(plan.value(), planned));
    }
    return submission;
}

bool boots_project_image(const SweepSubmission& submission) {
    return std::any_of(submission.runs.begin(), submission.runs.end(), [](const RunRecord& run) {
        const std::string hypervisor = run.config.value("hypervisor", "");
        const HypervisorKindDef* kind = find_hypervisor_kind(hypervisor);
        return kind == nullptr || kind->boots_project_image;
    });
}

Status check_backends(const SweepSubmission& submission, const BackendCatalog& backends) {
    std::set<std::string> checked;
    for (const auto& run : submission.runs) {
        if (!checked.insert(run.config_id).second) continue;
        auto config = storage_config_from_json(run.config);
        if (!config.ok()) return config.error();
        Status usable = backends.check(config.value(), submission.pinned_hosts);
        if (!usable.ok()) {
            return make_error(usable.error().code, "cannot run sweep '" + submission.sweep.name +
                                                       "': " + usable.error().message);
        }
    }
    return ok_status();
}

}  // namespace ds
