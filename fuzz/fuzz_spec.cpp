// A sweep spec as POST /v1/sweeps receives it: parsed, expanded into runs, and
// each configuration turned into what the daemon stores (daemon/api/api.cpp,
// plan_submission). Errors are fine; crashes, sanitizer reports, exceptions
// and hangs are not. Also checks that a configuration survives its JSON round
// trip (the daemon re-reads stored configurations with storage_config_from_json).
#include "common/settings.h"
#include "daemon/plan/expand.h"
#include "daemon/spec/spec.h"
#include "fuzz/fuzz_input.h"

namespace {

void store_configuration(const ds::StorageConfig& config) {
    const ds::Json json = ds::to_json(config);
    (void)ds::config_id(config);
    (void)ds::impossible_reason(config);
    (void)ds::durability_risks(config);
    (void)ds::filesystem_shorthand(config.filesystem);
    const auto reread = ds::storage_config_from_json(json);
    ds::fuzz::require(reread.ok() && reread.value() == config,
                      "storage_config_from_json(to_json(config)) == config");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto spec = ds::parse_sweep_spec(ds::fuzz::as_text(data, size), "fuzz.toml");
    if (!spec.ok()) return 0;
    auto plan = ds::expand_sweep(spec.value());
    if (!plan.ok()) return 0;
    for (const auto& config : plan->configs) store_configuration(config);
    for (const auto& workload : plan->workloads) (void)ds::to_json(workload);
    return 0;
}
