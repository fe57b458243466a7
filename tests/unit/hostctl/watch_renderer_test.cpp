// hostctl's watch output: a recorded event sequence (two runs at once, one
// of them with 22 identical bench ticks, one that fails) fed to the renderer
// as a terminal, as a pipe, with --quiet and with --json.
#include "hostctl/watch_renderer.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "unit/api_messages.h"

using ds::hostctl::Json;
using ds::hostctl::WatchDetail;
using ds::hostctl::WatchRenderer;
using ds::hostctl::WatchTerminal;

namespace {

// A GET /v1/runs/ID reply as the watch's RunLookup answers it: its run,
// nullopt for no answer (null).
std::optional<ds::api::RunEntry> run_of(const Json& reply) {
    if (reply.is_null()) return std::nullopt;
    return ds::api::test::decoded<ds::api::RunShowReply>(reply).run;
}

// Feeds `line` to `renderer` as hostctl's watch does: decoded, and as sent.
void feed(WatchRenderer& renderer, const Json& line, double now_s) {
    renderer.on_event(ds::api::test::decoded<ds::api::SweepEvent>(line), line, now_s);
}

// An event with its watcher clock (seconds).
struct Timed {
    double at;
    Json event;
};

Json progress_event(long run, const std::string& phase, const std::string& message,
                    std::optional<double> fraction = std::nullopt) {
    Json event = {{"type", "run_progress"}, {"sweep_id", 4},  {"run_id", run},  {"phase", phase},
                  {"message", message},     {"elapsed_s", 1}, {"total_runs", 3}};
    if (fraction) event["fraction"] = *fraction;
    return event;
}

Json started_event(long run, const std::string& label) {
    return {{"type", "run_started"}, {"sweep_id", 4},        {"run_id", run},   {"config_id", "c"},
            {"config_label", label}, {"workload", "randrw"}, {"repetition", 0}, {"total_runs", 3}};
}

Json counts(long pending, long running, long succeeded, long failed) {
    return {{"pending", pending},
            {"running", running},
            {"succeeded", succeeded},
            {"failed", failed},
            {"cancelled", 0}};
}

Json finished_event(long run, const std::string& status, const std::string& message,
                    double total_s) {
    return {{"type", "run_finished"}, {"sweep_id", 4},      {"run_id", run},  {"status", status},
            {"message", message},     {"total_s", total_s}, {"total_runs", 3}};
}

// The scheduler's event after each run: counts and its ETA.
Json counts_event(Json counts, double eta_s) {
    return {{"type", "progress"},
            {"sweep_id", 4},
            {"counts", std::move(counts)},
            {"eta_s", eta_s},
            {"total_runs", 3}};
}

// As the daemon sends them: run 1 and 2 at once on two hosts, run 1's bench
// ticking 22 times with the same message, run 2 failing, run 3 after them.
std::vector<Timed> recorded_sweep() {
    std::vector<Timed> events = {
        {0,
         {{"type", "snapshot"},
          {"sweep_id", 4},
          {"status", "running"},
          {"total_runs", 3},
          {"counts", counts(3, 0, 0, 0)}}},
        {1, started_event(1, "ext4 cache=none bus=virtio-blk")},
        {2, progress_event(1, "boot", "guest image: on host local")},
        {2, started_event(2, "btrfs cache=unsafe bus=virtio-blk")},
        {3, progress_event(2, "boot", "guest image: on host far")},
        {8, progress_event(1, "booted", "agent connected")},
        {9, progress_event(1, "format", "mkfs.ext4 -F /dev/vdb")},
        {9, progress_event(2, "booted", "agent connected")},
        {10, {{"type", "keepalive"}}},
        {11, progress_event(1, "mount", "mount /dev/vdb /mnt/data")},
        {11, progress_event(2, "format", "loading the btrfs module")},
        {12, progress_event(2, "format", "mkfs.btrfs -f /dev/vdb")},
    };
    for (int tick = 1; tick <= 22; ++tick) {
        events.push_back({12.0 + tick, progress_event(1, "bench", "fio running", tick / 22.0)});
        if (tick == 5) events.push_back({18, progress_event(2, "bench", "fio running", 0.1)});
    }
    events.push_back({35, finished_event(1, "succeeded", "", 34.2)});
    events.push_back({35, counts_event(counts(1, 1, 1, 0), 51)});
    events.push_back({36, started_event(3, "ext4 cache=none bus=virtio-blk")});
    events.push_back(
        {38, finished_event(2, "failed", "fio exited 1:\ncannot open /mnt/data/fio", 36)});
    events.push_back({38, counts_event(counts(0, 1, 1, 1), 20)});
    events.push_back({45, progress_event(3, "booted", "agent connected")});
    events.push_back({50, progress_event(3, "bench", "fio running", 0.5)});
    events.push_back({56, finished_event(3, "succeeded", "", 20)});
    events.push_back({56,
                      {{"type", "sweep_finished"},
                       {"sweep_id", 4},
                       {"status", "failed"},
                       {"counts", counts(0, 0, 2, 1)},
                       {"total_runs", 3}}});
    return events;
}

std::string render(const std::vector<Timed>& events, WatchDetail detail, WatchTerminal terminal,
                   std::size_t count = SIZE_MAX) {
    std::ostringstream out;
    WatchRenderer renderer(out, detail, std::move(terminal));
    for (std::size_t i = 0; i < events.size() && i < count; ++i)
        feed(renderer, events[i].event, events[i].at);
    if (count >= events.size()) renderer.end(4);
    return out.str();
}

WatchTerminal terminal(std::size_t columns) {
    return {true, [columns] { return columns; }};
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream stream(text);
    for (std::string line; std::getline(stream, line);) lines.push_back(line);
    return lines;
}

// What a terminal `columns` wide shows after `output`: the sequences the
// renderer may use ("\r", "\n", ESC[nA, ESC[J) applied, lines that reach the
// right margin wrapped as a terminal wraps them. Any other control byte
// fails the test.
std::vector<std::string> screen_after(const std::string& output, std::size_t columns) {
    std::vector<std::string> screen(1);
    std::size_t row = 0, column = 0;
    for (std::size_t i = 0; i < output.size(); ++i) {
        const char c = output[i];
        if (c == '\r') {
            column = 0;
        } else if (c == '\n') {
            if (++row == screen.size()) screen.emplace_back();
            column = 0;
        } else if (c == '\033') {
            REQUIRE(i + 1 < output.size());
            REQUIRE(output[i + 1] == '[');
            std::size_t end = output.find_first_not_of("0123456789", i + 2);
            REQUIRE(end != std::string::npos);
            const std::string digits = output.substr(i + 2, end - i - 2);
            const std::size_t count = digits.empty() ? 1 : std::stoul(digits);
            if (output[end] == 'A') {
                row = count > row ? 0 : row - count;
            } else if (output[end] == 'J') {
                screen[row].resize(std::min(screen[row].size(), column));
                screen.resize(row + 1);
            } else {
                FAIL("unexpected escape sequence " << output.substr(i + 1, end - i));
            }
            i = end;
        } else {
            REQUIRE(static_cast<unsigned char>(c) >= 0x20);
            if (column == columns) {  // the terminal wraps
                if (++row == screen.size()) screen.emplace_back();
                column = 0;
            }
            std::string& line = screen[row];
            if (line.size() < column) line.resize(column, ' ');
            if (column < line.size())
                line[column] = c;
            else
                line += c;
            ++column;
        }
    }
    if (!screen.empty() && screen.back().empty()) screen.pop_back();
    return screen;
}

std::size_t count_of(const std::string& text, const std::string& part) {
    std::size_t count = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        ++count;
    return count;
}

}  // namespace

TEST_CASE("through a pipe a watch prints one line per phase change of each run",
          "[hostctl][watch]") {
    const std::string out = render(recorded_sweep(), WatchDetail::kNormal, {false, {}});
    // 22 bench ticks of run 1, one line; run 2's second format message, none.
    CHECK(count_of(out, "bench") == 3);
    CHECK(out ==
          "sweep 4 running: 0/3 runs done (0 succeeded, 0 failed, 0 cancelled), 0 running\n"
          "run 1 (ext4 cache=none bus=virtio-blk, randrw) started\n"
          "run 1 (ext4 cache=none bus=virtio-blk, randrw): boot: guest image: on host local\n"
          "run 2 (btrfs cache=unsafe bus=virtio-blk, randrw) started\n"
          "run 2 (btrfs cache=unsafe bus=virtio-blk, randrw): boot: guest image: on host far\n"
          "run 1 (ext4 cache=none bus=virtio-blk, randrw): booted: agent connected\n"
          "run 1 (ext4 cache=none bus=virtio-blk, randrw): format: mkfs.ext4 -F /dev/vdb\n"
          "run 2 (btrfs cache=unsafe bus=virtio-blk, randrw): booted: agent connected\n"
          "run 1 (ext4 cache=none bus=virtio-blk, randrw): mount: mount /dev/vdb /mnt/data\n"
          "run 2 (btrfs cache=unsafe bus=virtio-blk, randrw): format: loading the btrfs module\n"
          "run 1 (ext4 cache=none bus=virtio-blk, randrw): bench: fio running\n"
          "run 2 (btrfs cache=unsafe bus=virtio-blk, randrw): bench: fio running\n"
          "run 1 (ext4 cache=none bus=virtio-blk, randrw) succeeded after 34s "
          "(1/3 done, 0 failed, ETA 1m10s)\n"
          "run 3 (ext4 cache=none bus=virtio-blk, randrw) started\n"
          "run 2 (btrfs cache=unsafe bus=virtio-blk, randrw) failed after 36s: fio exited 1: "
          "cannot open /mnt/data/fio (2/3 done, 1 failed, ETA 51s)\n"
          "run 3 (ext4 cache=none bus=virtio-blk, randrw): booted: agent connected\n"
          "run 3 (ext4 cache=none bus=virtio-blk, randrw): bench: fio running\n"
          "run 3 (ext4 cache=none bus=virtio-blk, randrw) succeeded after 20s "
          "(3/3 done, 1 failed)\n"
          "sweep 4 failed: 2 succeeded, 1 failed, 0 cancelled of 3 runs\n");
}

TEST_CASE("a pipe watch that starts while a run runs shows that run from its next phase",
          "[hostctl][watch]") {
    std::ostringstream out;
    WatchRenderer renderer(out, WatchDetail::kNormal, {false, {}});
    feed(renderer, progress_event(7, "bench", "fio running", 0.3), 0);
    feed(renderer, progress_event(7, "bench", "fio running", 0.4), 1);
    feed(renderer, progress_event(7, "trim", "fstrim /mnt/data"), 2);
    CHECK(out.str() == "run 7: bench: fio running\nrun 7: trim: fstrim /mnt/data\n");
}

TEST_CASE("on a terminal each running run has one line, rewritten in place", "[hostctl][watch]") {
    const auto events = recorded_sweep();
    // Up to the 10th bench tick of run 1: runs 1 and 2 run.
    std::size_t upto = 0;
    int ticks = 0;
    while (ticks < 10) {
        if (events[upto].event.value("phase", "") == "bench" &&
            events[upto].event.value("run_id", 0) == 1)
            ++ticks;
        ++upto;
    }
    const std::string out = render(events, WatchDetail::kNormal, terminal(120), upto);
    // Each of run 1's ten bench ticks redrew the area of two runs and the
    // bar: back to its first line, erase below.
    CHECK(count_of(out, "\r\033[2A\033[J") >= 10);
    CHECK(screen_after(out, 120) ==
          std::vector<std::string>{
              "run 1  ext4 cache=none bus=virtio-blk  randrw  bench 9s  45%  21s in all  fio "
              "running",
              "run 2  btrfs cache=unsafe bus=virtio-blk  randrw  bench 4s  10%  20s in all  fio "
              "running",
              "[------------------------]  0/3 runs  0 ok  0 failed  2 running  ETA ?"});
}

TEST_CASE("on a terminal a finished run leaves one summary line, and the end one more",
          "[hostctl][watch]") {
    const std::string out = render(recorded_sweep(), WatchDetail::kNormal, terminal(120));
    CHECK(screen_after(out, 120) ==
          std::vector<std::string>{
              "run 1 (ext4 cache=none bus=virtio-blk, randrw) succeeded after 34s",
              "run 2 (btrfs cache=unsafe bus=virtio-blk, randrw) failed after 36s: fio exited 1: "
              "cannot open /mnt/data/fio",
              "run 3 (ext4 cache=none bus=virtio-blk, randrw) succeeded after 20s",
              "[########################]  3/3 runs  2 ok  1 failed  0 running",
              "sweep 4 failed: 2 succeeded, 1 failed, 0 cancelled of 3 runs"});
    // The bench ticks rewrote run 1's live line; its summary was printed once.
    CHECK(count_of(out, "run 1 (") == 1);
}

TEST_CASE("on a narrow terminal live lines are cut, never wrapped", "[hostctl][watch]") {
    const auto events = recorded_sweep();
    for (std::size_t columns : {20, 40, 60}) {
        INFO(columns << " columns");
        // With runs 1 and 2 in their bench phase.
        const std::string out = render(events, WatchDetail::kNormal, terminal(columns), 25);
        const auto screen = screen_after(out, columns);
        REQUIRE(screen.size() == 3);  // two runs and the bar: nothing wrapped
        for (const auto& line : screen) CHECK(line.size() < columns);
        CHECK(screen[0].rfind("run 1  ", 0) == 0);
        CHECK(screen[0].back() == '~');
        CHECK(screen[2].rfind("[---", 0) == 0);
    }
}

TEST_CASE("the live area follows the terminal's width as it changes", "[hostctl][watch]") {
    std::size_t columns = 100;
    std::ostringstream out;
    WatchRenderer renderer(out, WatchDetail::kNormal, {true, [&columns] { return columns; }});
    feed(renderer, started_event(1, "ext4 cache=none bus=virtio-blk"), 0);
    feed(renderer, progress_event(1, "bench", "fio running", 0.5), 3);
    columns = 30;
    renderer.tick(4);
    const auto screen = screen_after(out.str(), 100);
    REQUIRE(screen.size() == 2);
    CHECK(screen[0] == "run 1  ext4 cache=none bus=v~");
}

TEST_CASE("tick moves a running run's elapsed time without an event", "[hostctl][watch]") {
    std::ostringstream out;
    WatchRenderer renderer(out, WatchDetail::kNormal, terminal(100));
    renderer.tick(0);
    CHECK(out.str().empty());  // no event yet: nothing to show
    feed(renderer, started_event(1, "ext4 cache=none bus=virtio-blk"), 0);
    feed(renderer, progress_event(1, "boot", "guest image: on host local"), 1);
    renderer.tick(65);
    CHECK(screen_after(out.str(), 100).front() ==
          "run 1  ext4 cache=none bus=virtio-blk  randrw  boot 1m04s  1m05s in all  guest image: "
          "on host local");
    std::ostringstream pipe;
    WatchRenderer lines(pipe, WatchDetail::kNormal, {false, {}});
    feed(lines, started_event(1, "ext4"), 0);
    const std::string before = pipe.str();
    lines.tick(5);
    CHECK(pipe.str() == before);  // no terminal: a tick prints nothing
}

TEST_CASE("a terminal shows at most kMaxLiveRuns runs, then how many more", "[hostctl][watch]") {
    std::ostringstream out;
    WatchRenderer renderer(out, WatchDetail::kNormal, terminal(100));
    for (long run = 1; run <= 11; ++run) feed(renderer, started_event(run, "ext4"), 0);
    const auto screen = screen_after(out.str(), 100);
    REQUIRE(screen.size() == WatchRenderer::kMaxLiveRuns + 2);
    CHECK(screen[WatchRenderer::kMaxLiveRuns] == "+3 more running");
}

TEST_CASE("a guest's control characters never reach the terminal", "[hostctl][watch]") {
    std::ostringstream out;
    WatchRenderer renderer(out, WatchDetail::kNormal, terminal(100));
    feed(renderer, started_event(1, "ext4"), 0);
    feed(renderer, progress_event(1, "bench\033[2J", "fio\r\033[31m running\a"), 1);
    const std::string text = out.str();
    CHECK(text.find("\033[2J") == std::string::npos);
    CHECK(text.find("\033[31m") == std::string::npos);
    CHECK(text.find('\a') == std::string::npos);
    CHECK_THAT(text, Catch::Contains("fio  [31m running "));
}

TEST_CASE("fit_terminal_line cuts by code points and marks the cut", "[hostctl][watch]") {
    using ds::hostctl::fit_terminal_line;
    CHECK(fit_terminal_line("short", 10) == "short");
    CHECK(fit_terminal_line("exactly10!", 10) == "exactly10!");
    CHECK(fit_terminal_line("one too long", 11) == "one too lo~");
    CHECK(fit_terminal_line("±±±±±", 3) == "±±~");  // never half a code point
    CHECK(fit_terminal_line("a\tb", 10) == "a b");
}

TEST_CASE("a watch with --quiet prints only the runs that did not succeed and the end",
          "[hostctl][watch]") {
    CHECK(render(recorded_sweep(), WatchDetail::kQuiet, {false, {}}) ==
          "run 2 (btrfs cache=unsafe bus=virtio-blk, randrw) failed after 36s: fio exited 1: "
          "cannot open /mnt/data/fio\n"
          "sweep 4 failed: 2 succeeded, 1 failed, 0 cancelled of 3 runs\n");
    // On a terminal too: nothing redrawn.
    CHECK(render(recorded_sweep(), WatchDetail::kQuiet, terminal(80)) ==
          render(recorded_sweep(), WatchDetail::kQuiet, {false, {}}));
}

TEST_CASE("a watch with --json passes each event through as one line, on a terminal too",
          "[hostctl][watch]") {
    const auto events = recorded_sweep();
    for (bool tty : {false, true}) {
        INFO("terminal: " << tty);
        const std::string out =
            render(events, WatchDetail::kJson, tty ? terminal(40) : WatchTerminal{});
        const auto lines = split_lines(out);
        std::vector<Json> expected;
        for (const auto& timed : events) {
            if (timed.event["type"] != "keepalive") expected.push_back(timed.event);
        }
        REQUIRE(lines.size() == expected.size());
        for (std::size_t i = 0; i < lines.size(); ++i) CHECK(Json::parse(lines[i]) == expected[i]);
    }
}

TEST_CASE("a succeeded run's summary line names its key metric, asked once per such run",
          "[hostctl][watch]") {
    std::vector<long> asked;
    const auto lookup = [&asked](long run_id) {
        asked.push_back(run_id);
        return run_of(run_id == 1
                          ? Json{{"run",
                                  {{"workload", {{"kind", "fio"}, {"params", {{"rw", "randrw"}}}}},
                                   {"metrics", {{"read_iops", 2273.4}}}}}}
                          : Json());
    };
    std::ostringstream out;
    WatchRenderer renderer(out, WatchDetail::kNormal, {false, {}}, lookup);
    for (const auto& timed : recorded_sweep()) feed(renderer, timed.event, timed.at);
    CHECK_THAT(out.str(),
               Catch::Contains("run 1 (ext4 cache=none bus=virtio-blk, randrw) succeeded "
                               "after 34s: read_iops 2273 (1/3 done"));
    CHECK_THAT(out.str(),
               Catch::Contains("run 3 (ext4 cache=none bus=virtio-blk, randrw) succeeded "
                               "after 20s (3/3 done"));
    CHECK(asked == std::vector<long>{1, 3});  // not the failed run 2
}

TEST_CASE("format_judged_metric picks the metric the run's workload is judged by",
          "[hostctl][watch]") {
    using ds::hostctl::format_judged_metric;
    const auto reply = [](const std::string& kind, const std::string& rw) {
        return Json{
            {"run",
             {{"workload", {{"kind", kind}, {"params", {{"rw", rw}}}}},
              {"metrics", {{"read_iops", 2273.4}, {"write_iops", 97.25}, {"total_s", 12.5}}}}}};
    };
    CHECK(format_judged_metric(*run_of(reply("fio", "randrw"))) == "read_iops 2273");
    CHECK(format_judged_metric(*run_of(reply("fio", "randwrite"))) == "write_iops 97.2");
    CHECK(format_judged_metric(*run_of(reply("mariadb-atis", ""))) == "total_s 12.5");
    CHECK(format_judged_metric(*run_of(reply("sysbench-oltp", ""))).empty());  // no tps in it
    CHECK(format_judged_metric(*run_of(reply("no-such-kind", ""))).empty());
    CHECK(format_judged_metric(ds::api::RunEntry{}).empty());
}

TEST_CASE("a run that started before the watch is named as run_started would have",
          "[hostctl][watch]") {
    const auto lookup = [](long run_id) {
        CHECK(run_id == 7);
        Json run = {{"id", 7}, {"workload_name", "randrw"}, {"started_at", "2026-12-05T04:00:00Z"}};
        run["config"] = {
            {"filesystem", {{"type", "ext4"}}}, {"cache", "none"}, {"bus", "virtio-blk"}};
        return run_of(Json{{"run", run}});
    };
    std::ostringstream out;
    WatchRenderer renderer(out, WatchDetail::kNormal, terminal(100), lookup);
    Json event = progress_event(7, "format", "mkfs.ext4 -F /dev/vdb");
    event["time"] = "2026-12-05T04:00:09Z";  // 9 s into the run
    feed(renderer, event, 2);
    renderer.tick(3);
    CHECK(screen_after(out.str(), 100).front() ==
          "run 7  ext4 cache=none bus=virtio-blk  randrw  format 1s  10s in all  mkfs.ext4 -F "
          "/dev/vdb");
    // Without an answer from the daemon: the run's id and what the event says.
    std::ostringstream bare;
    WatchRenderer unknown(bare, WatchDetail::kNormal, {false, {}},
                          [](long) { return run_of(Json()); });
    feed(unknown, event, 2);
    CHECK(bare.str() == "run 7: format: mkfs.ext4 -F /dev/vdb\n");
}

TEST_CASE("parse_utc_seconds reads the daemon's times and nothing else", "[hostctl][watch]") {
    using ds::hostctl::parse_utc_seconds;
    CHECK(parse_utc_seconds("1970-01-01T00:01:05Z") == 65);
    CHECK(parse_utc_seconds("2026-12-05T04:00:09Z") == 1796443209);
    CHECK_FALSE(parse_utc_seconds("2026-12-05 04:00:09").has_value());
    CHECK_FALSE(parse_utc_seconds("2026-12-05T04:00:09Z trailing").has_value());
    CHECK_FALSE(parse_utc_seconds("").has_value());
}
