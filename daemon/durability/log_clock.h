// Time in a write log (docs/durability.md, "The host's writeback"): the
// dm-log-writes format has no timestamps, so a durability run samples the
// log file's size against the host's clock while the guest runs, and this
// maps log offsets back to bounds on when they were written.
//
// How exact: a sample is (seconds since the measured window began, log
// size then). An entry that ends at offset E was appended to the log at or
// before the first sample that reached E (written_by), and after the last
// one that had not: with samples every 100 ms the bound is within 100 ms
// plus the time a `stat` of the log takes, so each side of a comparison
// errs by at most one sampling interval. Both bounds below err towards
// "not yet written back": an entry counts as old only when it surely is.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "common/json_fields.h"
#include "common/result.h"

namespace ds::durability {

struct LogSample {
    double seconds = 0;       // since the measured window began (the mark)
    std::uint64_t bytes = 0;  // the log's size then
};

class LogClock {
  public:
    // Samples in time order; sizes never shrink (a log only grows). Samples
    // out of order are dropped, so a caller's bug cannot invert time.
    explicit LogClock(std::vector<LogSample> samples);

    // The latest time the entry ending at `end_offset` can have been
    // written: the first sample whose size reached it; +infinity when no
    // sample did (written after the last one, e.g. at the guest's shutdown).
    double written_by(std::uint64_t end_offset) const;
    // The earliest time a crash after the entry ending at `log_offset` can
    // have come: the last sample whose size had not yet reached it (the
    // entry was still to be written then), 0 when none.
    double crash_not_before(std::uint64_t log_offset) const;

    const std::vector<LogSample>& samples() const { return samples_; }
    // The longest gap between two samples: how exact the mapping is.
    double max_gap_s() const;
    // {"samples": N, "max_gap_s": s, "series": [[s, bytes], ...]}, the
    // series cut to the samples where the size changed and the one before
    // each change (which bound the entries in between), at most
    // kMaxStoredSamples of them.
    Json to_json() const;
    // The clock again from to_json()'s "series" (a run's record, for
    // disksweep-replay); errc::kInvalidArgument naming what is wrong.
    static Result<LogClock> from_json(const Json& clock);

    static constexpr double kNever = std::numeric_limits<double>::infinity();
    static constexpr std::size_t kMaxStoredSamples = 20000;

  private:
    std::vector<LogSample> samples_;
};

}  // namespace ds::durability
