#include "daemon/backends/hypervisor/proxmox/pve_data_disk.h"

#include <algorithm>
#include <charconv>

#include "common/protocol.h"

namespace ds {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

// Each bus's drive key and controller, and what PVE's drive of that bus has
// (its keys in PVE 8.4's schema: scsi[n], virtio[n], sata[n]).
struct BusRule {
    Bus bus;
    std::string_view key;                    // the data disk's drive key
    std::optional<std::string_view> scsihw;  // the controller to set, if any
    bool ssd;                                // the drive has `ssd`
    bool iothread;                           // the drive has `iothread` and it takes effect
    bool queues;                             // the drive has `queues` (>= 2)
};

constexpr BusRule kBusRules[] = {
    {Bus::kVirtioBlk, "virtio1", std::nullopt, false, true, false},
    // A shared virtio-scsi controller: PVE gives a disk its own IO thread only
    // on virtio-scsi-single (else it warns and ignores `iothread`).
    {Bus::kScsi, "scsi1", "virtio-scsi-pci", true, false, true},
    {Bus::kScsiSingle, "scsi1", "virtio-scsi-single", true, true, true},
    {Bus::kSata, "sata1", std::nullopt, true, false, false},
};

const BusRule& rule_for(Bus bus) {
    return *std::find_if(std::begin(kBusRules), std::end(kBusRules),
                         [bus](const BusRule& rule) { return rule.bus == bus; });
}

Error unsupported(const StorageConfig& config, const std::string& what) {
    return make_error(errc::kUnsupported, "proxmox cannot apply " + what + " (bus " +
                                              std::string(to_string(config.bus)) +
                                              "): PVE 8.4's drive has no such setting");
}

// PVE derives QEMU's detect-zeroes from two drive keys: detect_zeroes=0 is
// off; otherwise it is unmap with discard=on and on without it.
Result<bool> pve_detect_zeroes(const StorageConfig& config) {
    switch (config.detect_zeroes) {
        case DetectZeroes::kOff:
            return false;
        case DetectZeroes::kOn:
            if (config.discard) return unsupported(config, "detect_zeroes=on with discard");
            return true;
        case DetectZeroes::kUnmap:
            if (!config.discard) return unsupported(config, "detect_zeroes=unmap without discard");
            return true;
    }
    return false;
}

// The drive's limits: PVE drops bps*, so bandwidth goes as mbps (MiB/s, a number).
void add_limits(const StorageConfig& config, PvePropertyString& drive) {
    if (config.bandwidth_limit) {
        drive.set_number("mbps", static_cast<double>(*config.bandwidth_limit) / kMiB);
    }
    if (config.iops_limit) drive.set_integer("iops", static_cast<std::int64_t>(*config.iops_limit));
}

Status check_bus_support(const StorageConfig& config, const BusRule& rule) {
    if (config.ssd && !rule.ssd) return unsupported(config, "ssd");
    if (config.iothread && !rule.iothread) return unsupported(config, "iothread");
    if (config.queues && !rule.queues) return unsupported(config, "queues");
    if (config.queues && *config.queues < 2) {
        return make_error(errc::kUnsupported,
                          "proxmox cannot apply queues=" + std::to_string(*config.queues) +
                              ": PVE's drive queues start at 2");
    }
    return ok_status();
}

// PVE's JSON gives a boolean drive key as 0/1 (number or string).
bool pve_flag(const PvePropertyString& drive, std::string_view key) {
    const auto value = drive.get(key);
    return value && (*value == "1" || *value == "on" || *value == "yes" || *value == "true");
}

std::string detect_zeroes_in_force(const PvePropertyString& drive) {
    const auto value = drive.get("detect_zeroes");
    if (value && !pve_flag(drive, "detect_zeroes")) return "off";
    return drive.get("discard") == std::optional<std::string>("on") ? "unmap" : "on";
}

// A drive key's value as a whole count ("5000"); nullopt when absent or not one.
std::optional<std::uint64_t> drive_count(const PvePropertyString& drive, std::string_view key) {
    const auto text = drive.get(key);
    if (!text || text->empty()) return std::nullopt;
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (error != std::errc() || end != text->data() + text->size()) return std::nullopt;
    return value;
}

// mbps (MiB/s, a number) as the bytes per second QEMU gets: qemu-server
// PVE/QemuServer.pm print_drive_commandline_full gives QEMU
// throttling.bps=int(mbps*1024*1024), truncated.
std::optional<std::uint64_t> drive_bandwidth(const PvePropertyString& drive) {
    const auto text = drive.get("mbps");
    if (!text || text->empty()) return std::nullopt;
    double mbps = 0;
    const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), mbps);
    if (error != std::errc() || end != text->data() + text->size() || !(mbps >= 0)) {
        return std::nullopt;
    }
    return static_cast<std::uint64_t>(mbps * static_cast<double>(kMiB));
}

// The limits and queues of the drive in our names; PVE writes no key for
// an unthrottled drive or single queue, and neither does this.
void add_drive_limits(const PvePropertyString& drive, Json& applied) {
    if (auto iops = drive_count(drive, "iops"); iops && *iops > 0) applied["iops_limit"] = *iops;
    if (auto bps = drive_bandwidth(drive); bps && *bps > 0) applied["bandwidth_limit"] = *bps;
    if (auto queues = drive_count(drive, "queues")) applied["queues"] = *queues;
}

}  // namespace

Result<PveDataDisk> pve_data_disk(const StorageConfig& config,
                                  const HypervisorAllocatedDisk& disk) {
    const BusRule& rule = rule_for(config.bus);
    DS_TRY(check_bus_support(config, rule));
    if (disk.storage.empty()) {
        return make_error(errc::kInvalidArgument, "proxmox data disk: no PVE storage named");
    }
    if (disk.size_bytes == 0 || disk.size_bytes % kMiB != 0) {
        return make_error(errc::kUnsupported,
                          "proxmox data disk: size must be a positive whole number of MiB");
    }
    auto detect_zeroes = pve_detect_zeroes(config);
    if (!detect_zeroes) return detect_zeroes.error();

    PvePropertyString drive(disk.storage + ":" +
                            pve_number_text(static_cast<double>(disk.size_bytes) / kGiB));
    drive.set("format", std::string(to_string(config.image_format)))
        .set("cache", std::string(to_string(config.cache)));
    if (config.aio != AioMode::kDefault) drive.set("aio", std::string(to_string(config.aio)));
    drive.set("discard", config.discard ? "on" : "ignore");
    if (rule.ssd) drive.set_flag("ssd", config.ssd);
    if (rule.iothread) drive.set_flag("iothread", config.iothread);
    drive.set_flag("detect_zeroes", *detect_zeroes);
    if (config.queues) drive.set_integer("queues", static_cast<std::int64_t>(*config.queues));
    add_limits(config, drive);
    drive.set("serial", std::string(protocol::kDataDiskSerial));

    PveDataDisk data_disk{std::string(rule.key), std::move(drive), std::nullopt};
    if (rule.scsihw) data_disk.scsihw = std::string(*rule.scsihw);
    DS_TRY(data_disk.drive.encode());
    return data_disk;
}

Result<std::optional<PveDataDiskReadBack>> read_pve_data_disk(const Json& config) {
    for (const BusRule& rule : kBusRules) {
        const auto value = pve_config_text(config, std::string(rule.key));
        if (!value) continue;
        auto drive = PvePropertyString::parse(*value);
        if (!drive) return drive.error();
        if (drive->get("serial") != std::optional<std::string>(protocol::kDataDiskSerial)) continue;
        const auto scsihw = pve_config_text(config, "scsihw");
        Bus bus = rule.bus;
        if (rule.key.starts_with("scsi")) {
            bus = scsihw == std::optional<std::string>("virtio-scsi-single") ? Bus::kScsiSingle
                                                                             : Bus::kScsi;
        }
        Json options = Json::object();
        for (const auto& [key, option] : drive->entries()) options[key] = option;
        Json applied = {{"bus", to_string(bus)},
                        {"cache", drive->get("cache").value_or("none")},
                        {"aio", drive->get("aio").value_or("default")},
                        {"discard", drive->get("discard") == std::optional<std::string>("on")},
                        {"detect_zeroes", detect_zeroes_in_force(*drive)},
                        {"ssd", pve_flag(*drive, "ssd")},
                        {"iothread", pve_flag(*drive, "iothread")},
                        {"pve",
                         {{"drive", rule.key},
                          {"value", *value},
                          {"volume", drive->default_value()},
                          {"options", options},
                          {"scsihw", scsihw.value_or("lsi")}}}};
        applied["levels"] = {
            {"domain_xml", {{"checked", true}, {"source", "PVE config (GET .../config)"}}}};
        add_drive_limits(*drive, applied);
        return std::optional<PveDataDiskReadBack>(PveDataDiskReadBack{
            std::string(rule.key), std::move(drive).value(), std::move(applied)});
    }
    return std::optional<PveDataDiskReadBack>();
}

}  // namespace ds
