#include "guestagent/cli.h"

#include <signal.h>

#include <array>
#include <charconv>
#include <functional>
#include <iostream>

#include "common/protocol.h"
#include "common/version.h"
#include "guestagent/channel.h"
#include "guestagent/file_channel.h"
#include "guestagent/init.h"
#include "guestagent/log.h"

namespace ds::agent {
namespace {

Result<std::chrono::milliseconds> parse_seconds(const std::string& option,
                                                const std::string& text) {
    double seconds = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (error != std::errc() || end != text.data() + text.size() || seconds < 0) {
        return make_error(errc::kInvalidArgument,
                          option + ": '" + text + "' is not a number of seconds");
    }
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// The options, declared once: parsing and --help come from this table.
struct OptionDef {
    std::string_view name;
    std::string_view value_name;  // "" for a flag
    std::string_view help;
    std::function<Status(CommandLine&, const std::string& value)> apply;
};

Status set_duration(std::chrono::milliseconds& target, const std::string& option,
                    const std::string& value) {
    auto parsed = parse_seconds(option, value);
    if (!parsed) return parsed.error();
    target = *parsed;
    return ok_status();
}

const std::vector<OptionDef>& option_table() {
    static const std::vector<OptionDef> table = {
        {"--port", "PATH",
         "channel: a unix socket, tty or character device (default: the virtio-serial port "
         "named org.disksweep.agent.0)",
         [](CommandLine& c, const std::string& v) {
             c.port = v;
             return ok_status();
         }},
        {"--job-file", "FILE",
         "one-shot mode: read the job message from FILE instead of a channel (with "
         "--progress-file and --result-file)",
         [](CommandLine& c, const std::string& v) {
             c.job_file = v;
             return ok_status();
         }},
        {"--progress-file", "FILE",
         "one-shot mode: keep hello and the latest progress message in FILE, replaced whole",
         [](CommandLine& c, const std::string& v) {
             c.progress_file = v;
             return ok_status();
         }},
        {"--result-file", "FILE", "one-shot mode: write the result or error to FILE at the end",
         [](CommandLine& c, const std::string& v) {
             c.result_file = v;
             return ok_status();
         }},
        {"--sysfs-root", "DIR", "where sysfs is mounted (default /sys)",
         [](CommandLine& c, const std::string& v) {
             c.agent.roots.sysfs = v;
             return ok_status();
         }},
        {"--proc-root", "DIR", "where procfs is mounted (default /proc)",
         [](CommandLine& c, const std::string& v) {
             c.agent.roots.proc = v;
             return ok_status();
         }},
        {"--dev-root", "DIR", "where device nodes are (default /dev)",
         [](CommandLine& c, const std::string& v) {
             c.agent.roots.dev = v;
             return ok_status();
         }},
        {"--os-release", "FILE", "the guest's os-release file (default /etc/os-release)",
         [](CommandLine& c, const std::string& v) {
             c.agent.roots.os_release = v;
             return ok_status();
         }},
        {"--mount-point", "DIR", "where to mount the data disk (default /mnt/disksweep)",
         [](CommandLine& c, const std::string& v) {
             c.agent.mount_point = v;
             return ok_status();
         }},
        {"--scratch-dir", "DIR",
         "writable tmpfs directory for the workload's scratch files (default /run/disksweep)",
         [](CommandLine& c, const std::string& v) {
             c.agent.scratch_dir = v;
             return ok_status();
         }},
        {"--data-device", "PATH",
         "use this block device instead of the disk with serial disksweep-data (DESTROYS ITS "
         "DATA)",
         [](CommandLine& c, const std::string& v) {
             c.agent.data_device = v;
             return ok_status();
         }},
        {"--channel-wait", "SECONDS", "wait this long for the channel (default 120)",
         [](CommandLine& c, const std::string& v) {
             return set_duration(c.channel_wait, "--channel-wait", v);
         }},
        {"--job-wait", "SECONDS", "wait this long for the job after hello (default 300)",
         [](CommandLine& c, const std::string& v) {
             return set_duration(c.agent.job_wait, "--job-wait", v);
         }},
        {"--device-wait", "SECONDS", "wait this long for the data disk (default 30)",
         [](CommandLine& c, const std::string& v) {
             return set_duration(c.agent.device_wait, "--device-wait", v);
         }},
        {"--shutdown-wait", "SECONDS", "wait this long for shutdown after the result (default 30)",
         [](CommandLine& c, const std::string& v) {
             return set_duration(c.agent.shutdown_wait, "--shutdown-wait", v);
         }},
        {"--pid1", "", "started as the guest's init: power off when done (only when PID 1)",
         [](CommandLine& c, const std::string&) {
             c.pid1 = true;
             return ok_status();
         }},
        {"--version", "", "print the version and exit",
         [](CommandLine& c, const std::string&) {
             c.version = true;
             return ok_status();
         }},
        {"--help", "", "print this help and exit",
         [](CommandLine& c, const std::string&) {
             c.help = true;
             return ok_status();
         }},
    };
    return table;
}

bool one_shot(const CommandLine& command_line) {
    return !command_line.job_file.empty();
}

// The combinations the table cannot express option by option.
Status check_mode(const CommandLine& command_line) {
    const int given = !command_line.job_file.empty() + !command_line.progress_file.empty() +
                      !command_line.result_file.empty();
    if (given != 0 && given != 3) {
        return make_error(errc::kInvalidArgument,
                          "--job-file, --progress-file and --result-file go together "
                          "(one-shot mode)");
    }
    if (one_shot(command_line) && (!command_line.port.empty() || command_line.pid1)) {
        return make_error(errc::kInvalidArgument,
                          "one-shot mode (--job-file) takes no --port and no --pid1");
    }
    return ok_status();
}

Result<std::unique_ptr<Channel>> open_agent_channel(const CommandLine& command_line,
                                                    const Clock& clock) {
    if (one_shot(command_line)) {
        return FileChannel::open(
            {command_line.job_file, command_line.progress_file, command_line.result_file},
            protocol::kMaxMessageBytes, clock);
    }
    const auto deadline = clock.now() + command_line.channel_wait;
    if (!command_line.port.empty()) return open_channel(command_line.port, deadline, clock);
    // Without udev the port node appears once virtio_console has probed it.
    for (;;) {
        auto port = find_virtio_port(command_line.agent.roots, protocol::kChannelName);
        if (port) return open_channel(command_line.agent.roots.dev + "/" + *port, deadline, clock);
        if (clock.now() >= deadline) return port.error();
        clock.sleep_for(std::chrono::milliseconds(200));
    }
}

}  // namespace

std::string usage_text() {
    std::string text =
        "usage: disksweep-agent [OPTION...]\n"
        "Runs one disksweep job inside a guest: hello, job, tune, format, mount, workload,\n"
        "result.\n\n";
    for (const auto& option : option_table()) {
        std::string left = "  " + std::string(option.name);
        if (!option.value_name.empty()) left += " " + std::string(option.value_name);
        if (left.size() < 26) left.resize(26, ' ');
        text += left + " " + std::string(option.help) + "\n";
    }
    return text;
}

Result<CommandLine> parse_command_line(const std::vector<std::string>& args) {
    CommandLine command_line;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string name = args[i];
        std::optional<std::string> value;
        if (const auto equals = name.find('='); equals != std::string::npos) {
            value = name.substr(equals + 1);
            name.resize(equals);
        }
        const OptionDef* option = nullptr;
        for (const auto& known : option_table()) {
            if (known.name == name) option = &known;
        }
        if (option == nullptr) {
            return make_error(errc::kInvalidArgument,
                              "unknown option '" + args[i] + "' (see --help)");
        }
        if (option->value_name.empty()) {
            if (value) return make_error(errc::kInvalidArgument, name + " takes no value");
            DS_TRY(option->apply(command_line, ""));
            continue;
        }
        if (!value) {
            if (i + 1 >= args.size()) {
                return make_error(
                    errc::kInvalidArgument,
                    name + " needs a value (" + std::string(option->value_name) + ")");
            }
            value = args[++i];
        }
        DS_TRY(option->apply(command_line, *value));
    }
    DS_TRY(check_mode(command_line));
    return command_line;
}

int run_agent(const CommandLine& command_line, const Clock& clock) {
    // A vanished host must surface as a write error, not kill the agent.
    ::signal(SIGPIPE, SIG_IGN);
    wait_for_random_pool();
    auto channel = open_agent_channel(command_line, clock);
    if (!channel) {
        log_line("no channel to the host: " + channel.error().message);
        return 1;
    }
    RealProcessRunner runner;
    RealGuestSystem system;
    AgentOptions options = command_line.agent;
    options.host_answers_after_job = !one_shot(command_line);
    Agent agent(**channel, runner, system, options, clock);
    auto end = agent.run_session();
    if (!end) {
        log_line("session failed: " + end.error().message);
        return 1;
    }
    if (one_shot(command_line)) return *end == SessionEnd::kShutdownEarly ? 1 : 0;
    return *end == SessionEnd::kErrorSent ? 1 : 0;
}

int agent_main(int argc, char** argv) {
    const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    const auto command_line = parse_command_line(args);
    const auto main_body = [&command_line]() -> int {
        if (!command_line) {
            std::cerr << "disksweep-agent: " << command_line.error().message << "\n";
            return 2;
        }
        if (command_line->help) {
            std::cout << usage_text();
            return 0;
        }
        if (command_line->version) {
            std::cout << "disksweep-agent " << disksweep_version() << " (protocol "
                      << protocol::kVersion << ")\n";
            return 0;
        }
        return run_agent(*command_line);
    };
    // As PID 1, whatever happens (even a bad command line) ends in a power
    // off, never in PID 1 exiting.
    if (is_pid1()) run_as_init(main_body);
    if (command_line && command_line->pid1) {
        log_line("--pid1 given but this is not PID 1: exiting instead of powering off");
    }
    return main_body();
}

}  // namespace ds::agent
