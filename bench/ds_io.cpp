// ds-io: the agent's native I/O engine (ds::io::run_io_job) as a command
// line, fio-style, for benchmarks and debugging:
//   ds-io --name=x --rw=randrw --bs=4k --ioengine=libaio --iodepth=64 ...
//   ds-io --params='{"rw":"randrw","bs":"4k"}'
// Prints the JSON report on stdout. Exit status: 0 done, 1 the job failed,
// 2 bad usage. SIGINT/SIGTERM stop the job (it then fails as cancelled).
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "guestagent/io_job.h"

namespace {

std::atomic<bool> g_stop{false};

void request_stop(int) {
    g_stop.store(true);
}

int usage(const std::string& problem) {
    std::cerr << "ds-io: " << problem << "\n"
              << "usage: ds-io --OPTION=VALUE... | --params=JSON-OBJECT\n"
              << "options (fio's names and syntax):\n";
    for (const auto& spec : ds::io::job_option_specs()) {
        std::cerr << "  --" << spec.name << "  " << spec.help << "\n";
    }
    for (const auto* engine : ds::io::all_engines()) {
        for (const auto& spec : engine->options) {
            std::cerr << "  --" << spec.name << "  (ioengine=" << engine->name << ") " << spec.help
                      << "\n";
        }
    }
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    ds::Json params = ds::Json::object();
    for (int i = 1; i < argc; ++i) {
        const std::string argument = argv[i];
        if (argument == "--help" || argument == "-h") return usage("help");
        if (argument.rfind("--", 0) != 0 || argument.find('=') == std::string::npos) {
            return usage("expected --OPTION=VALUE, got \"" + argument + "\"");
        }
        const std::string name = argument.substr(2, argument.find('=') - 2);
        const std::string value = argument.substr(argument.find('=') + 1);
        if (name == "output-format") continue;  // always JSON
        if (name == "params") {
            try {
                const auto parsed = ds::Json::parse(value);
                if (!parsed.is_object()) return usage("--params is not a JSON object");
                params.update(parsed);
            } catch (const ds::Json::exception& e) {
                return usage(std::string("--params does not parse: ") + e.what());
            }
            continue;
        }
        params[name] = value;
    }
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    auto report = ds::io::run_io_job(params, &g_stop);
    if (!report) {
        std::cerr << "ds-io: " << report.error().code << ": " << report.error().message << "\n";
        return report.error().code == ds::errc::kInvalidArgument ? 2 : 1;
    }
    std::cout << report->dump(2) << std::endl;
    return 0;
}
