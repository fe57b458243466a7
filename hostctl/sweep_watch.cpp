#include "hostctl/sweep_watch.h"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "hostctl/watch_renderer.h"

namespace ds::hostctl {

const std::vector<FlagSpec>& watch_flags() {
    static const std::vector<FlagSpec> kFlags = {
        {"quiet", "show only the runs that did not succeed, the sweep's summary and errors"}};
    return kFlags;
}

std::optional<ExitCode> refuse_watch_flags(const Invocation& invocation) {
    if (invocation.flag("quiet") && invocation.json_output)
        return invocation.usage_error("--quiet and --json exclude each other");
    return std::nullopt;
}

namespace {

// How much a watch shows: --json, --quiet, else everything.
WatchDetail watch_detail(const Invocation& invocation) {
    if (invocation.json_output) return WatchDetail::kJson;
    return invocation.flag("quiet") ? WatchDetail::kQuiet : WatchDetail::kNormal;
}

// Redraws a terminal's live lines once a second while it lives, so that
// elapsed times keep moving when no event comes (a booting run sends none).
// The renderer is shared with the event callback: `mutex` guards it.
class WatchTicker {
  public:
    WatchTicker(WatchRenderer& renderer, std::mutex& mutex, std::function<double()> seconds)
        : mutex_(mutex), thread_([this, &renderer, seconds = std::move(seconds)] {
              std::unique_lock lock(mutex_);
              while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; })) {
                  try {
                      renderer.tick(seconds());
                  } catch (...) {
                      return;  // no exception leaves the thread; the stream's own writes fail too
                  }
              }
          }) {}
    WatchTicker(const WatchTicker&) = delete;
    WatchTicker& operator=(const WatchTicker&) = delete;
    // Stops and joins the thread; the caller must not hold the mutex.
    ~WatchTicker() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

  private:
    std::mutex& mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;  // guarded by mutex_
    std::thread thread_;     // last: starts once the members above exist
};

}  // namespace

ExitCode watch_sweep(Invocation& invocation, long sweep_id) {
    const auto started = invocation.now();
    const auto seconds = [&invocation, started] {
        return std::chrono::duration<double>(invocation.now() - started).count();
    };
    const WatchDetail detail = watch_detail(invocation);
    // What events do not carry (a run's metrics; the configuration of a run
    // that started before the watch): one GET per such run, on a second
    // connection (the daemon serves each on a thread of its own).
    const RunLookup run_lookup =
        [&client = invocation.client](long run_id) -> std::optional<api::RunEntry> {
        ApiReply reply = client.get("/v1/runs/" + std::to_string(run_id));
        if (!reply.ok()) return std::nullopt;
        auto decoded = api::RunShowReply::from_json(reply.body);
        return decoded.ok() ? decoded->run : std::nullopt;
    };
    WatchRenderer renderer(
        invocation.out, detail,
        {invocation.environment.stdout_is_tty, invocation.environment.terminal_columns},
        run_lookup);
    std::mutex mutex;
    std::optional<WatchTicker> ticker;
    if (detail == WatchDetail::kNormal && invocation.environment.stdout_is_tty &&
        invocation.environment.redraw_each_second)
        ticker.emplace(renderer, mutex, seconds);
    // An event that does not decode ends the watch: what follows it would
    // be folded from a stream this client cannot read.
    std::optional<Error> unreadable;
    ApiReply reply = invocation.client.follow("/v1/sweeps/" + std::to_string(sweep_id) + "/events",
                                              [&](const Json& line) {
                                                  auto event = api::decode<api::SweepEvent>(line);
                                                  if (!event.ok()) {
                                                      unreadable = event.error();
                                                      return false;
                                                  }
                                                  std::lock_guard lock(mutex);
                                                  renderer.on_event(event.value(), line, seconds());
                                                  return !renderer.progress().finished();
                                              });
    ticker.reset();
    renderer.end(sweep_id);
    if (!reply.ok()) return invocation.fail(reply);
    if (unreadable) return invocation.fail_to_read(*unreadable);
    if (!renderer.progress().finished()) {
        invocation.err << "hostctl: the event stream of sweep " << sweep_id
                       << " ended before the sweep finished\n";
        return ExitCode::kFailed;
    }
    return renderer.progress().all_succeeded() ? ExitCode::kOk : ExitCode::kFailed;
}

}  // namespace ds::hostctl
