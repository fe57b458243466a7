// The one owner of the sweeps' parsed specs: a sweep's stored spec text
// (SweepRecord::spec_toml) is parsed the first time anyone asks and the
// typed SweepSpec kept for the daemon's life, so the API, the scheduler's
// workers, compare and the report all read the same object. A submitted
// sweep's spec, parsed once at submission, is kept here under its new id.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>

#include "common/result.h"
#include "daemon/spec/spec.h"
#include "daemon/store/store.h"

namespace ds {

class SweepSpecs {
  public:
    // How spec text becomes a SweepSpec: parse_sweep_spec, or a test's
    // counting stand-in.
    using Parse =
        std::function<Result<SweepSpec>(std::string_view toml_text, std::string_view source)>;

    explicit SweepSpecs(Parse parse = parse_sweep_spec);

    // The spec of a stored sweep, parsed from its spec_toml the first time
    // and then kept. Text that does not parse gives its error to every caller
    // and is parsed again when asked again: an error is never kept. Safe to
    // call from any thread; concurrent callers get the same object.
    Result<std::shared_ptr<const SweepSpec>> spec_of(const SweepRecord& sweep);

    // Parses text not stored yet (a submission), keeping nothing: keep() it
    // once the store has given the sweep its id.
    Result<std::shared_ptr<const SweepSpec>> parse(std::string_view toml_text,
                                                   std::string_view source) const;
    void keep(std::int64_t sweep_id, std::shared_ptr<const SweepSpec> spec);

  private:
    Parse parse_;
    std::mutex mutex_;  // held while parsing too, so a sweep is parsed once
    std::map<std::int64_t, std::shared_ptr<const SweepSpec>> by_sweep_;
};

// The sweep's spec from `specs`, or parsed for this one call when there is
// no owner (tests and benchmarks that compare or report a store directly).
Result<std::shared_ptr<const SweepSpec>> spec_of(SweepSpecs* specs, const SweepRecord& sweep);

}  // namespace ds
