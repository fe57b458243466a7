// The host's half of one durability run (docs/durability.md), in files of
// its own: before the guest boots, a copy of the volume as it is then and an
// empty write log for QEMU's blklogwrites; after the guest stopped, the log
// read, the crash states chosen (daemon/durability/crash_states.h), crash
// images built from the copy in batches (replay.h), and each batch's checker
// reports turned into what the states lost (crash_verdict.h). Booting the
// checker guest is the caller's (RunAttempt): this class touches only files.
//
// Everything lives in DIR/run-ID (DIR: the daemon's durability directory);
// remove() deletes it, and start-up recovery deletes whatever a killed
// daemon left there.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/durability/crash_states.h"
#include "daemon/durability/crash_verdict.h"
#include "daemon/durability/log_writes.h"
#include "daemon/run/ack_ledger.h"

namespace ds {

class DurabilityTrial {
  public:
    // Creates DIR/run-RUN_ID, copies the volume file `volume_path` (the
    // run's fresh volume) into it and creates the empty log. No log entry
    // may reach past `size_limit` bytes of an image (the guest chose them:
    // a raw volume's size; a qcow2 file may grow). errc::kIo naming the step
    // on failure (nothing is left then).
    static Result<DurabilityTrial> start(const std::string& durability_dir, std::int64_t run_id,
                                         const std::string& volume_path, std::uint64_t size_limit,
                                         CacheMode cache, const DurabilityOptions& options);

    const std::string& log_path() const { return log_path_; }
    // The log's size now, for the ack ledger; nullopt when it cannot be read.
    std::optional<std::uint64_t> log_bytes() const;

    // After the guest stopped: reads the log and chooses the crash states,
    // from the first acknowledgement on (CrashModelOptions::from_log_offset).
    // An Error when the log is not one (it names the entry).
    Status plan(const std::vector<AckEntry>& acks);
    std::size_t state_count() const { return states_.size(); }

    // Builds the crash images of states [first, first + count) and returns
    // their paths, in state order.
    Result<std::vector<std::string>> build_images(std::size_t first, std::size_t count);
    // The checker's reports on those images, in the same order: what each
    // state lost against the acks. The images are deleted.
    void record_checks(std::size_t first, const std::vector<CrashCheck>& checks);

    // applied_settings.durability (docs/schema.md): the model, the log's
    // figures, the summary and each state. Call after every state is recorded.
    Json result() const;
    // Seconds spent building images (images_s) and checking them (check_s,
    // the caller's boots included, measured by the caller).
    void add_check_seconds(double seconds) { check_s_ += seconds; }

    // Deletes the run's directory; errc::kIo naming what stayed. With
    // keep_files the log and the pre-run copy move first to
    // DIR-kept/run-ID (applied_settings.durability.kept_files).
    Status remove() const;

  private:
    DurabilityTrial() = default;
    std::string image_path(std::size_t state) const;
    // Moves the log and the pre-run copy to kept_dir_.
    Status keep_files() const;

    std::string dir_;
    std::string kept_dir_;  // where keep_files puts the log and the copy
    std::string pre_run_path_;
    std::string log_path_;
    std::uint64_t size_limit_ = 0;
    CacheMode cache_ = CacheMode::kNone;
    DurabilityOptions options_;
    std::uint64_t seed_ = 0;
    durability::LogIndex log_;
    std::vector<AckEntry> acks_;
    std::uint64_t from_log_offset_ = 0;  // the first ack's log size
    std::uint64_t to_log_offset_ = 0;    // the last ack's
    std::vector<durability::CrashState> states_;
    std::vector<CrashStateResult> results_;
    double images_s_ = 0;
    double check_s_ = 0;
};

}  // namespace ds
