// One acknowledgement of a ledger workload as the host noted it
// (docs/durability.md): the record's id and how far the run's write log had
// grown when the ack arrived. The run keeps them (daemon/run/ack_ledger.h);
// the crash verdict reads them (crash_verdict.h).
#pragma once

#include <cstdint>
#include <optional>

namespace ds {

struct AckEntry {
    long long id = 0;
    // The log's size in bytes when the ack arrived; absent without a log.
    std::optional<std::uint64_t> log_bytes;
};

}  // namespace ds
