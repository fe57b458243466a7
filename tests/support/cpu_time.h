// CPU time of this test process's children, for tests that check what
// forked work (job processes) cost.
#pragma once

#include <sys/resource.h>

namespace ds::test {

// User + system seconds of every child this process has waited for.
inline double children_cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_CHILDREN, &usage);
    return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

}  // namespace ds::test
