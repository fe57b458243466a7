// The host's half of one durability run (docs/durability.md), in files of
// its own: before the guest boots, a copy of the volume as it is then and an
// empty write log for QEMU's blklogwrites; at the guest's mark_ready, the
// volume made durable on the host, the log's size noted (the mark) and its
// clock started (log_sampler.h); after the guest stopped, the log read, the
// crash states of each host model chosen (daemon/durability/
// crash_states.h), crash images built from the copy in batches (replay.h,
// one per distinct state: where the two models agree, one check serves
// both), and each batch's checker reports turned into what the states lost
// (crash_verdict.h). Booting the checker guest is the caller's
// (DurabilityPhase, durability_phase.h): this class touches only files.
//
// Everything lives in DIR/run-ID (DIR: the daemon's durability directory);
// remove() deletes it, and start-up recovery deletes whatever a killed
// daemon left there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/settings.h"
#include "daemon/durability/crash_states.h"
#include "daemon/durability/crash_verdict.h"
#include "daemon/durability/log_writes.h"
#include "daemon/run/ack_ledger.h"
#include "daemon/run/log_sampler.h"

namespace ds {

// The host's writeback of dirty pages (Linux Documentation/admin-guide/
// sysctl/vm.rst): a page dirty for longer than dirty_expire_centisecs is
// written at the flusher threads' next wakeup, every
// dirty_writeback_centisecs, so a write older than their sum is on the
// host's disk. A dirty_writeback_centisecs of 0 turns the periodic
// writeback off: then no age makes a write safe (no window).
struct HostWriteback {
    long long dirty_expire_centisecs = 0;
    long long dirty_writeback_centisecs = 0;
    std::optional<double> window_s() const;
    Json to_json() const;
};
// Reads both from `vm_dir` (/proc/sys/vm of the host running the run);
// errc::kIo naming the file when one cannot be read as a count.
Result<HostWriteback> read_host_writeback(const std::string& vm_dir = "/proc/sys/vm");

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

    // At the guest's mark_ready, its setup synced: fsyncs the volume (under
    // cache=unsafe QEMU left it in the host's page cache), notes the log's
    // size (the mark) and starts the log's clock. `writeback` is the host's
    // writeback, or why it could not be read. errc::kIo when the volume
    // cannot be synced.
    Status mark(Result<HostWriteback> writeback);
    // The guest stopped: the clock's last sample. plan() calls it too.
    void stop_clock();

    // After the guest stopped: reads the log and chooses the crash states
    // of each host model, from the first acknowledgement on
    // (CrashModelOptions::from_log_offset). An Error when the log is not
    // one (it names the entry).
    Status plan(const std::vector<AckEntry>& acks);
    // The distinct crash images to check: each model's states, a state the
    // models share counted once.
    std::size_t state_count() const { return images_.size(); }

    // Builds the crash images [first, first + count) and returns their
    // paths, in order.
    Result<std::vector<std::string>> build_images(std::size_t first, std::size_t count);
    // The checker's reports on those images, in the same order. The images
    // are deleted.
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
    // One host model's crash states, and for each the image it is checked on.
    struct ModelStates {
        std::vector<durability::CrashState> states;
        std::vector<std::size_t> image_of;
    };
    // A distinct image: state `state` of the worst case, or of host writeback.
    struct ImageSource {
        bool host_writeback = false;
        std::size_t state = 0;
    };

    DurabilityTrial() = default;
    std::string image_path(std::size_t image) const;
    const durability::CrashState& state_of(const ImageSource& source) const;
    // Moves the log and the pre-run copy to kept_dir_.
    Status keep_files() const;
    // Gives each state of `model` an image: an existing one with the same
    // entries, else a new one.
    void assign_images(ModelStates& model, bool host_writeback);
    // The states' results, from their images' checks.
    std::vector<CrashStateResult> results_of(const ModelStates& model) const;
    Json model_json(const ModelStates& model) const;
    Json mark_json() const;
    Json host_writeback_json() const;

    std::string dir_;
    std::string volume_path_;
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
    // The mark: the log's size once the guest's setup was made durable.
    std::optional<std::uint64_t> mark_log_offset_;
    double host_sync_s_ = 0;
    std::optional<Result<HostWriteback>> writeback_;  // read at the mark
    std::unique_ptr<LogSampler> sampler_;
    std::vector<durability::LogSample> samples_;  // once the clock stopped
    ModelStates worst_case_;
    std::optional<ModelStates> host_writeback_;  // modes that delay writes
    std::vector<ImageSource> images_;
    std::vector<CrashCheck> checks_;  // per image, once recorded
    double images_s_ = 0;
    double check_s_ = 0;
};

}  // namespace ds
