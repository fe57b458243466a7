// How long a sweep's runs may take: the daemon's defaults, or what the
// spec's boot_timeout_s and run_timeout_s ask for (plan_submission).
#pragma once

namespace ds {

struct SweepTimeouts {
    int boot_timeout_s = 60;
    int run_timeout_s = 900;
};

}  // namespace ds
