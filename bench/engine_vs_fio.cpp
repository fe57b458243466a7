// engine_vs_fio: the agent's native I/O engine (ds-io) against fio on the same
// target with the same job, alternating (the order rotates every round so
// drift in a shared machine's load hits all alike). For every run it
// records IOPS (read + write), CPU seconds per million I/Os (user + system
// time of the child process and everything it waited for, from wait4, over
// the I/Os the run reports), the cores it used (CPU time / wall time) and
// the read/write completion-latency p99.
//
// Both run each job as its own process in its own session (fio's default,
// and ds-io's: with autogroup scheduling every session is a scheduling
// group, so the process model decides the CPU share on a busy machine).
// With numjobs > 1 it also runs both with --thread=1 (jobs as threads of
// one process) and compares those two as a second pair. With several
// --ioengines (e.g. libaio,io_uring) each is a pair of its own (tools
// "engine:io_uring" and "fio:io_uring"), all in the same rotation.
//
//   engine_vs_fio [--rounds=5] [--runtime=3] [--numjobs=1,4] [--size=256m]
//                 [--targets=tmpfs,loop] [--workdir=/dev/shm/disksweep-bench]
//                 [--loop-file=PATH] [--loop-size=SIZE] [--engine=PATH]
//                 [--fio=fio] [--threads=auto|on|off] [--ioengines=libaio]
//                 [--set=KEY=VALUE]...
//
// Targets: "tmpfs" = per-job files in --workdir (O_DIRECT works on tmpfs
// since Linux 6.6); "loop" = a loop device over --loop-file (default
// <workdir>/loop-backing.img) of --loop-size (default --size), shared by
// all jobs, each working on the whole device (needs root and losetup);
// anything else is taken as a path (a block device or file) used as
// filename=. Ratios are of the medians; the per-round ratios' medians
// follow in parentheses. The 1-minute load average is sampled before every run and
// printed per table (min / median / max). The job is fio's
//   --rw=randrw --bs=4k --direct=1 --ioengine=IOENGINE --iodepth=64
//   --numjobs=N --size=SIZE --runtime=R --time_based=1 --group_reporting=1
// (--size omitted for the loop target) plus any --set overrides. Prints a table per (target,
// numjobs) with the medians and the engine/fio ratios; exit status 0 unless something failed to
// run.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/fio_job.h"
#include "common/fio_metrics.h"
#include "common/text.h"
#include "guestagent/io_options.h"

namespace {

struct Settings {
    int rounds = 5;
    std::string runtime = "3";
    std::vector<unsigned> numjobs = {1, 4};
    std::string size = "256m";
    std::vector<std::string> targets = {"tmpfs", "loop"};
    std::string workdir = "/dev/shm/disksweep-bench";
    std::string fio = "fio";
    std::string engine = DS_IO_BIN;
    std::string threads = "auto";  // also run both with --thread=1: auto = when numjobs > 1
    std::string loop_file;         // empty: <workdir>/loop-backing.img
    std::string loop_size;         // empty: size
    std::vector<std::string> ioengines = {"libaio"};  // one engine/fio pair each
    std::vector<std::pair<std::string, std::string>> overrides;
};

struct Child {
    int exit_status = -1;
    std::string out;
    std::string err;
    double cpu_s = 0;
};

// Runs argv, capturing stdout and stderr, and returns its exit status and
// the CPU time of it and its waited-for descendants (wait4's rusage).
std::optional<Child> run_child(const std::vector<std::string>& argv) {
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return std::nullopt;
    const pid_t pid = fork();
    if (pid < 0) return std::nullopt;
    if (pid == 0) {
        dup2(out_pipe[1], STDOUT_FILENO);
        dup2(err_pipe[1], STDERR_FILENO);
        std::vector<char*> args;
        for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    Child child;
    // stderr is small; read stdout to the end first, then stderr.
    char buffer[65536];
    for (int fd : {out_pipe[0], err_pipe[0]}) {
        std::string& sink = fd == out_pipe[0] ? child.out : child.err;
        while (true) {
            const ssize_t got = read(fd, buffer, sizeof buffer);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break;
            sink.append(buffer, static_cast<std::size_t>(got));
        }
        close(fd);
    }
    int status = 0;
    rusage usage{};
    while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
    }
    child.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    child.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    return child;
}

struct Measurement {
    double iops = 0;
    double cpu_s_per_mio = 0;
    double cores = 0;
    double read_p99_us = 0;
    double write_p99_us = 0;
};

std::optional<Measurement> measure(const std::string& tool, const std::vector<std::string>& argv) {
    const auto started = std::chrono::steady_clock::now();
    auto child = run_child(argv);
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!child || child->exit_status != 0) {
        std::cerr << tool << " failed (exit " << (child ? child->exit_status : -1)
                  << "): " << (child ? child->err.substr(0, 2000) : std::string("cannot start"))
                  << "\n";
        return std::nullopt;
    }
    auto document = ds::parse_fio_stdout(child->out);
    if (!document) {
        std::cerr << tool << ": " << document.error().message << "\n";
        return std::nullopt;
    }
    auto metrics = ds::metrics_from_fio_json(*document);
    if (!metrics) {
        std::cerr << tool << ": " << metrics.error().message << "\n";
        return std::nullopt;
    }
    double total_ios = 0;
    for (const auto& job : (*document)["jobs"]) {
        total_ios += job["read"].value("total_ios", 0.0) + job["write"].value("total_ios", 0.0);
    }
    auto metric = [&](const char* name) {
        const auto found = metrics->find(name);
        return found == metrics->end() ? 0.0 : found->second;
    };
    Measurement m;
    m.iops = metric("read_iops") + metric("write_iops");
    m.cpu_s_per_mio = total_ios > 0 ? child->cpu_s / total_ios * 1e6 : 0;
    m.cores = wall_s > 0 ? child->cpu_s / wall_s : 0;
    m.read_p99_us = metric("read_clat_p99_us");
    m.write_p99_us = metric("write_clat_p99_us");
    return m;
}

double median(std::vector<double> values) {
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::stringstream stream(text);
    std::string part;
    while (std::getline(stream, part, separator)) {
        if (!part.empty()) parts.push_back(part);
    }
    return parts;
}

// Writes `bytes` of pseudo-random data to `path` (so reads hit real pages).
bool fill_file(const std::string& path, std::uint64_t bytes) {
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    std::vector<std::uint64_t> chunk(1 << 17);
    std::uint64_t state = 42;
    for (auto& word : chunk)
        word = (state = state * 6364136223846793005ull + 1442695040888963407ull);
    const std::size_t chunk_bytes = chunk.size() * sizeof(std::uint64_t);
    bool ok = true;
    for (std::uint64_t done = 0; done < bytes && ok;) {
        const std::size_t length =
            static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, bytes - done));
        const ssize_t written = write(fd, chunk.data(), length);
        ok = written > 0;
        done += ok ? static_cast<std::uint64_t>(written) : 0;
    }
    ok = fsync(fd) == 0 && ok;
    close(fd);
    return ok;
}

struct Target {
    std::string label;
    std::string key;          // "filename" or "directory"
    std::string value;        // its value
    std::string loop_device;  // to detach afterwards
    std::string loop_file;    // to delete afterwards
};

// The 1-minute load average, from /proc/loadavg (-1 when unreadable).
double load_average() {
    std::FILE* file = std::fopen("/proc/loadavg", "r");
    if (!file) return -1;
    double load = -1;
    if (std::fscanf(file, "%lf", &load) != 1) load = -1;
    std::fclose(file);
    return load;
}

std::string loop_file_of(const Settings& settings) {
    return settings.loop_file.empty() ? settings.workdir + "/loop-backing.img" : settings.loop_file;
}

std::optional<Target> prepare_target(const std::string& spec, const Settings& settings,
                                     std::uint64_t size_bytes) {
    mkdir(settings.workdir.c_str(), 0755);
    if (spec == "tmpfs")
        return Target{"tmpfs files (" + settings.workdir + ")", "directory", settings.workdir, "",
                      ""};
    if (spec == "loop") {
        const std::string backing = loop_file_of(settings);
        if (!fill_file(backing, size_bytes)) {
            std::cerr << "loop: cannot write " << backing << "\n";
            return std::nullopt;
        }
        auto attached = run_child({"losetup", "--find", "--show", backing});
        if (!attached || attached->exit_status != 0) {
            std::cerr << "loop target skipped: losetup failed: "
                      << (attached ? attached->err : std::string("cannot run losetup")) << "\n";
            unlink(backing.c_str());
            return std::nullopt;
        }
        std::string device = attached->out;
        device.erase(device.find_last_not_of(" \n") + 1);
        return Target{"loop device " + device + " over " + backing, "filename", device, device,
                      backing};
    }
    return Target{spec, "filename", spec, "", ""};
}

void release_target(const Target& target, const Settings& settings) {
    if (target.loop_device.empty()) return;
    (void)run_child({"losetup", "-d", target.loop_device});
    unlink(target.loop_file.c_str());
    (void)settings;
}

std::vector<std::string> job_argv(const std::string& program, const Settings& settings,
                                  const Target& target, unsigned numjobs,
                                  const std::string& ioengine, const std::string& runtime) {
    std::map<std::string, std::string> options = {
        {"name", "dsbench"},
        {"rw", "randrw"},
        {"bs", "4k"},
        {"direct", "1"},
        {"ioengine", ioengine},
        {"iodepth", "64"},
        {"numjobs", std::to_string(numjobs)},
        {"runtime", runtime},
        {"time_based", "1"},
        {"group_reporting", "1"},
        {target.key, target.value},
    };
    // A loop device is worked on whole (its size is --loop-size).
    if (target.loop_device.empty()) options["size"] = settings.size;
    for (const auto& [key, value] : settings.overrides) options[key] = value;
    // The ioengine first: fio knows an engine's own options (--set=fixedbufs=1)
    // only once the engine is set.
    std::vector<std::string> argv = {program, "--output-format=json",
                                     "--ioengine=" + options["ioengine"]};
    options.erase("ioengine");
    for (const auto& [key, value] : options) argv.push_back("--" + key + "=" + value);
    return argv;
}

void print_header() {
    std::printf("  %-19s %10s %12s %6s %12s %12s\n", "tool", "IOPS", "CPU s/M I/O", "cores",
                "read p99 us", "write p99 us");
}

void print_row(const std::string& tool, const Measurement& m) {
    std::printf("  %-19s %10.0f %12.3f %6.2f %12.1f %12.1f\n", tool.c_str(), m.iops,
                m.cpu_s_per_mio, m.cores, m.read_p99_us, m.write_p99_us);
}

Measurement medians(const std::vector<Measurement>& runs) {
    std::vector<double> iops, cpu, cores, read, write;
    for (const auto& run : runs) {
        iops.push_back(run.iops);
        cpu.push_back(run.cpu_s_per_mio);
        cores.push_back(run.cores);
        read.push_back(run.read_p99_us);
        write.push_back(run.write_p99_us);
    }
    return {median(iops), median(cpu), median(cores), median(read), median(write)};
}

double ratio(double a, double b) {
    return b > 0 ? a / b : 0.0;
}

// "IOPS x1.23, CPU/IO x0.61, p99 r x0.95 w x0.97" of `a` against `b`.
std::string ratios(const Measurement& a, const Measurement& b) {
    char text[256];
    std::snprintf(text, sizeof text, "IOPS x%.2f, CPU/IO x%.2f, p99 read x%.2f write x%.2f",
                  ratio(a.iops, b.iops), ratio(a.cpu_s_per_mio, b.cpu_s_per_mio),
                  ratio(a.read_p99_us, b.read_p99_us), ratio(a.write_p99_us, b.write_p99_us));
    return text;
}

// The median over rounds of a/b per round (rounds where both ran), field
// by field: robust to load that drifts between rounds, since the two runs of
// a round are adjacent in time.
Measurement paired_ratio_medians(const std::vector<std::optional<Measurement>>& a,
                                 const std::vector<std::optional<Measurement>>& b) {
    std::vector<Measurement> per_round;
    for (std::size_t round = 0; round < std::min(a.size(), b.size()); ++round) {
        if (!a[round] || !b[round]) continue;
        per_round.push_back({ratio(a[round]->iops, b[round]->iops),
                             ratio(a[round]->cpu_s_per_mio, b[round]->cpu_s_per_mio),
                             ratio(a[round]->cores, b[round]->cores),
                             ratio(a[round]->read_p99_us, b[round]->read_p99_us),
                             ratio(a[round]->write_p99_us, b[round]->write_p99_us)});
    }
    return medians(per_round);
}

// One program in one process model with one ioengine, and its runs.
struct Tool {
    std::string name;
    std::string program;
    std::string ioengine;
    bool thread = false;
    std::vector<Measurement> runs;
    std::vector<std::optional<Measurement>> by_round;
};

// The tools of one table, in compared pairs (engine, fio): one pair per
// ioengine, then (with threads) the same with --thread=1. With one
// ioengine the names are the plain "engine", "fio", "engine-thr" and
// "fio-thr"; with several they end in ":IOENGINE".
std::vector<Tool> make_tools(const Settings& settings, unsigned numjobs) {
    const bool threads = settings.threads == "on" || (settings.threads == "auto" && numjobs > 1);
    std::vector<Tool> tools;
    for (const bool thread : {false, true}) {
        if (thread && !threads) break;
        const std::string model = thread ? "-thr" : "";
        for (const auto& ioengine : settings.ioengines) {
            const std::string suffix = settings.ioengines.size() > 1 ? ":" + ioengine : "";
            tools.push_back({"engine" + model + suffix, settings.engine, ioengine, thread, {}, {}});
            tools.push_back({"fio" + model + suffix, settings.fio, ioengine, thread, {}, {}});
        }
    }
    return tools;
}

int usage(const std::string& problem) {
    std::cerr << "engine_vs_fio: " << problem << "\n"
              << "usage: engine_vs_fio [--rounds=5] [--runtime=3] [--numjobs=1,4] "
                 "[--size=256m] [--targets=tmpfs,loop|PATH] [--workdir=DIR] [--loop-file=PATH] "
                 "[--loop-size=SIZE] [--engine=PATH] [--fio=fio] [--threads=auto|on|off] "
                 "[--ioengines=libaio,io_uring] [--set=KEY=VALUE]...\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    Settings settings;
    for (int i = 1; i < argc; ++i) {
        const std::string argument = argv[i];
        const auto equals = argument.find('=');
        if (argument.rfind("--", 0) != 0 || equals == std::string::npos) {
            return usage("unexpected argument \"" + argument + "\"");
        }
        const std::string name = argument.substr(2, equals - 2);
        const std::string value = argument.substr(equals + 1);
        if (name == "rounds") {
            settings.rounds = std::max(1, std::atoi(value.c_str()));
        } else if (name == "runtime") {
            settings.runtime = value;
        } else if (name == "numjobs") {
            settings.numjobs.clear();
            for (const auto& part : split(value, ',')) {
                settings.numjobs.push_back(static_cast<unsigned>(std::atoi(part.c_str())));
            }
        } else if (name == "size") {
            settings.size = value;
        } else if (name == "targets") {
            settings.targets = split(value, ',');
        } else if (name == "workdir") {
            settings.workdir = value;
        } else if (name == "fio") {
            settings.fio = value;
        } else if (name == "engine") {
            settings.engine = value;
        } else if (name == "loop-file") {
            settings.loop_file = value;
        } else if (name == "loop-size") {
            settings.loop_size = value;
        } else if (name == "threads" || name == "fio-thread") {
            if (value != "auto" && value != "on" && value != "off") {
                return usage("--threads is auto, on or off");
            }
            settings.threads = value;
        } else if (name == "ioengines") {
            settings.ioengines = split(value, ',');
            if (settings.ioengines.empty()) return usage("--ioengines needs at least one engine");
        } else if (name == "set") {
            const auto inner = value.find('=');
            if (inner == std::string::npos) return usage("--set needs KEY=VALUE");
            settings.overrides.emplace_back(value.substr(0, inner), value.substr(inner + 1));
        } else {
            return usage("unknown option --" + name);
        }
    }
    const auto size_bytes = ds::io::parse_fio_size(settings.size);
    if (!size_bytes) return usage("--size is not a size");
    const auto loop_bytes =
        ds::io::parse_fio_size(settings.loop_size.empty() ? settings.size : settings.loop_size);
    if (!loop_bytes) return usage("--loop-size is not a size");

    int failures = 0;
    std::vector<std::string> summary;
    for (const auto& spec : settings.targets) {
        auto target = prepare_target(spec, settings, *loop_bytes);
        if (!target) {
            ++failures;
            continue;
        }
        for (unsigned numjobs : settings.numjobs) {
            std::printf("\n%s, randrw 4k %s iodepth=64 numjobs=%u size=%s runtime=%ss, %d rounds\n",
                        target->label.c_str(), ds::join(settings.ioengines, ",").c_str(), numjobs,
                        target->loop_device.empty() ? settings.size.c_str() : "device",
                        settings.runtime.c_str(), settings.rounds);
            std::vector<Tool> tools = make_tools(settings, numjobs);
            auto argv_of = [&](const Tool& tool, const std::string& runtime) {
                auto argv =
                    job_argv(tool.program, settings, *target, numjobs, tool.ioengine, runtime);
                if (tool.thread) argv.push_back("--thread=1");
                return argv;
            };
            // Unmeasured warm-up of each: lays out per-job files, warms caches.
            for (const auto& tool : tools) (void)measure(tool.name, argv_of(tool, "1"));
            print_header();
            std::vector<double> loads;
            for (int round = 0; round < settings.rounds; ++round) {
                for (std::size_t slot = 0; slot < tools.size(); ++slot) {
                    Tool& tool = tools[(slot + static_cast<std::size_t>(round)) % tools.size()];
                    loads.push_back(load_average());
                    const auto result = measure(tool.name, argv_of(tool, settings.runtime));
                    tool.by_round.push_back(result);
                    if (!result) {
                        ++failures;
                        continue;
                    }
                    print_row(tool.name, *result);
                    tool.runs.push_back(*result);
                }
            }
            std::sort(loads.begin(), loads.end());
            char load_text[128];
            std::snprintf(load_text, sizeof load_text,
                          "load average (1 min) before the runs: min %.2f median %.2f max %.2f",
                          loads.front(), median(loads), loads.back());
            std::printf("  %s\n  median:\n", load_text);
            std::vector<Measurement> median_of;
            for (const auto& tool : tools) {
                median_of.push_back(medians(tool.runs));
                print_row(tool.name, median_of.back());
            }
            std::string line =
                target->label + " numjobs=" + std::to_string(numjobs) + ", " + load_text + ":";
            char numbers[256];
            for (std::size_t i = 0; i < tools.size(); ++i) {
                std::snprintf(
                    numbers, sizeof numbers,
                    "\n      %-19s %8.0f IOPS %6.3f CPU-s/MIO %5.2f cores p99 %.0f/%.0f us",
                    tools[i].name.c_str(), median_of[i].iops, median_of[i].cpu_s_per_mio,
                    median_of[i].cores, median_of[i].read_p99_us, median_of[i].write_p99_us);
                line += numbers;
            }
            // Pairs: (engine, fio) and, when run, (engine-thr, fio-thr).
            for (std::size_t i = 0; i + 1 < tools.size(); i += 2) {
                const Measurement paired =
                    paired_ratio_medians(tools[i].by_round, tools[i + 1].by_round);
                char paired_text[160];
                std::snprintf(paired_text, sizeof paired_text,
                              " (per-round ratio medians: IOPS x%.2f, CPU/IO x%.2f, p99 read "
                              "x%.2f write x%.2f)",
                              paired.iops, paired.cpu_s_per_mio, paired.read_p99_us,
                              paired.write_p99_us);
                const std::string versus = tools[i].name + "/" + tools[i + 1].name + ": " +
                                           ratios(median_of[i], median_of[i + 1]) + paired_text;
                std::printf("  %s\n", versus.c_str());
                line += "\n      " + versus;
            }
            std::fflush(stdout);
            summary.push_back(line);
        }
        release_target(*target, settings);
    }
    std::printf("\nsummary (medians, engine vs fio):\n");
    for (const auto& line : summary) std::printf("  %s\n", line.c_str());
    return failures == 0 ? 0 : 1;
}
