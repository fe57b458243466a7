#include "daemon/run/resource_names.h"

#include <utility>

#include "daemon/config.h"

namespace ds {

ResourceNames::ResourceNames(std::string instance)
    : instance_(std::move(instance)), prefix_("disksweep-" + instance_ + "-") {}

Result<ResourceNames> ResourceNames::for_instance(std::string instance) {
    DS_TRY(check_instance_name(instance));
    return ResourceNames(std::move(instance));
}

std::string ResourceNames::vm(std::int64_t run_id) const {
    return prefix_ + "r" + std::to_string(run_id);
}

std::string ResourceNames::volume(std::int64_t run_id) const {
    return vm(run_id) + "-data";
}

std::string ResourceNames::probe() const {
    return prefix_ + "probe";
}

}  // namespace ds
