#include "daemon/plan/sweep_specs.h"

#include <utility>

namespace ds {

SweepSpecs::SweepSpecs(Parse parse) : parse_(std::move(parse)) {}

Result<std::shared_ptr<const SweepSpec>> SweepSpecs::spec_of(const SweepRecord& sweep) {
    std::lock_guard lock(mutex_);
    auto known = by_sweep_.find(sweep.id);
    if (known != by_sweep_.end()) return known->second;
    DS_ASSIGN_OR_RETURN(auto spec, parse(sweep.spec_toml, sweep.spec_source));
    by_sweep_[sweep.id] = spec;
    return spec;
}

Result<std::shared_ptr<const SweepSpec>> SweepSpecs::parse(std::string_view toml_text,
                                                           std::string_view source) const {
    DS_ASSIGN_OR_RETURN(auto spec, parse_(toml_text, source));
    return std::shared_ptr<const SweepSpec>(std::make_shared<SweepSpec>(std::move(spec)));
}

void SweepSpecs::keep(std::int64_t sweep_id, std::shared_ptr<const SweepSpec> spec) {
    std::lock_guard lock(mutex_);
    by_sweep_[sweep_id] = std::move(spec);
}

Result<std::shared_ptr<const SweepSpec>> spec_of(SweepSpecs* specs, const SweepRecord& sweep) {
    if (specs != nullptr) return specs->spec_of(sweep);
    return SweepSpecs().parse(sweep.spec_toml, sweep.spec_source);
}

}  // namespace ds
