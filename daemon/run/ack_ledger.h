// The host's record of a ledger workload's acknowledgements (docs/durability.md).
// The guest sends `ack` {run_id, id} the moment record `id` is acknowledged;
// the host notes, for each, how far the run's write log had grown by then
// (when the run has one): every crash state cut at or after that point must
// still hold the record. The guest is untrusted: ids must come 1, 2, 3, ...
// for this run, and its result must report exactly as many as it sent.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/durability/ack_entry.h"
#include "daemon/run/guest_messages.h"

namespace ds {

class AckLedger {
  public:
    // `log_bytes` (may be empty) tells the run's write log's current size.
    AckLedger(std::string run_id, std::function<std::optional<std::uint64_t>()> log_bytes);

    // errc::kProtocol naming the violation: an ack for another run, or an id
    // that is not the next one.
    Status record(const guest::Ack& ack);
    // errc::kProtocol when the result's count of acknowledged records is not
    // the number of acks received.
    Status check_result_count(long long reported) const;

    const std::vector<AckEntry>& entries() const { return entries_; }
    // {"acks_received": N, "last_id": N, "log_bytes_at_ack": [..] (with a log)}
    // for the run's applied_settings.
    Json summary() const;

  private:
    std::string run_id_;
    std::function<std::optional<std::uint64_t>()> log_bytes_;
    std::vector<AckEntry> entries_;
};

}  // namespace ds
