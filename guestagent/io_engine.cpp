#include "guestagent/io_engine.h"

#include <unistd.h>

#include <array>
#include <cstring>

#include "common/text.h"

namespace ds::io {
namespace {

constexpr std::array<const EngineDescriptor*, 4> kEngines = {&kLibaioEngine, &kUringEngine,
                                                             &kPsyncEngine, &kNullEngine};

constexpr int kIdleSubmitTries = 1000;
constexpr useconds_t kIdleSubmitSleepUs = 100;

}  // namespace

bool IdleSubmitRetry::wait() {
    if (++tries_ > kIdleSubmitTries) return false;
    usleep(kIdleSubmitSleepUs);
    return true;
}

std::span<const EngineDescriptor* const> all_engines() {
    return kEngines;
}

std::string engine_names() {
    return join(kEngines, ", ", [](const EngineDescriptor* engine) { return engine->name; });
}

Result<const EngineDescriptor*> engine_by_name(std::string_view name) {
    for (const EngineDescriptor* engine : kEngines) {
        if (engine->name != name) continue;
        if (engine->ops_version != kIoEngineOpsVersion) {
            return make_error(errc::kInternal,
                              "ioengine " + std::string(name) + " implements ops version " +
                                  std::to_string(engine->ops_version) + ", the runner needs " +
                                  std::to_string(kIoEngineOpsVersion));
        }
        return engine;
    }
    return make_error(errc::kInvalidArgument, "unsupported ioengine '" + std::string(name) +
                                                  "'; supported: " + engine_names());
}

}  // namespace ds::io
