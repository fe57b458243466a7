// QEMU's view of a drive through HMP `info` commands alone (what a PVE 9
// token with Sys.Audit may run), for both shapes PVE builds: the legacy
// `-drive` device (qemu_block.cpp) and qemu-server 9's -blockdev chain.
//
// The chain (qemu-server src/PVE/QemuServer/Blockdev.pm,
// generate_drive_blockdev): a "throttle" filter node named "drive-<id>"
// (top_node_name) with throttle-group "throttle-drive-<id>"
// (generate_throttle_blockdev), over a format node "f<hash>", over a file
// node "e<hash>" (get_node_name). cache.direct and cache.no-flush are set on
// the format and file nodes only (generate_blockdev_drive_cache, "define
// cache option on both format && file node like libvirt"); discard and
// detect-zeroes on all three (add_common_options); the guest device gets
// write-cache=off for writethrough and directsync, on otherwise
// (DriveDevice.pm, print_drivedevice_full).
//
// What HMP prints of it (QEMU block/qapi.c, bdrv_block_device_info, and
// block/monitor/block-hmp-cmds.c, print_block_info):
//  * `info block` lists the anonymous BlockBackend under its top node's name
//    "drive-scsi1", with the throttle node's driver and filename; its Cache
//    mode's writeback is the BlockBackend's blk_enable_write_cache (the
//    device's write cache), its direct and ignore flushes the throttle
//    node's own open flags, which qemu-server never sets;
//  * `info block -n` lists every node (blk = NULL there, so writeback is
//    always printed): the format and file nodes show the real
//    BDRV_O_NOCACHE (", direct") and BDRV_O_NO_FLUSH (", ignore flushes");
//  * no `I/O throttling:` line: QEMU prints it only for a BlockBackend's own
//    throttle_group_member (legacy -drive throttling), not for a throttle
//    filter node; the limits are properties of the throttle-group object
//    (qom-get, Sys.Modify on PVE 9).
#include "common/text.h"
#include "daemon/backends/hypervisor/qemu_block.h"

namespace ds {
namespace {

constexpr std::size_t kMaxChainDepth = 8;  // throttle, [alloc-track, zeroinit,] format, file

Error drive_error(std::string_view device, const std::string& why) {
    return make_error(errc::kHypervisor, "QEMU's view of " + std::string(device) + ": " + why);
}

// Why each setting cannot be seen through HMP `info` commands.
constexpr std::string_view kAioUnseen =
    "no HMP info command prints a block node's aio (block-hmp-cmds.c print_block_info shows "
    "cache, detect zeroes and BlockBackend throttling only)";
constexpr std::string_view kDiscardUnseen =
    "no HMP info command prints a block node's discard option; only detect_zeroes=unmap implies "
    "it";
constexpr std::string_view kLimitUnseen =
    "a -blockdev drive's limits sit in its throttle-group object (throttle-drive-<id>), which "
    "only qom-get shows (Sys.Modify on PVE 9); `info block` prints I/O throttling only for a "
    "legacy -drive";
constexpr std::string_view kIothreadUnseen =
    "no HMP info command shows which IO thread a device uses: `info qtree` omits link properties "
    "(virtio-blk's and virtio-scsi's iothread), `info iothreads` lists the threads only";

// The text at `key` of a json object; "" when absent or not text (the json
// comes from the monitor: nlohmann's value() would throw on a number).
std::string text_at(const Json& object, const char* key) {
    if (!object.is_object() || !object.contains(key) || !object.at(key).is_string()) return "";
    return object.at(key).get<std::string>();
}

// A block node's filename in `info block`: "json:{...}" when the node has
// options of its own (block.c, bdrv_refresh_filename), else a path.
std::optional<Json> filename_json(std::string_view file) {
    if (!file.starts_with("json:")) return std::nullopt;
    Json parsed = Json::parse(file.substr(5), nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
    return parsed;
}

// The innermost "filename" of a node's options, following "file" children:
// what a node without strong options of its own prints as its filename
// (bdrv_refresh_filename copies its child's exact_filename).
std::string innermost_filename(const Json& options) {
    const Json* level = &options;
    for (std::size_t depth = 0; depth < kMaxChainDepth && level->is_object(); ++depth) {
        if (level->contains("filename") && level->at("filename").is_string())
            return level->at("filename").get<std::string>();
        if (!level->contains("file")) break;
        level = &level->at("file");
    }
    return "";
}

// Whether `node` of `info block -n` is the child a parent's json filename
// describes: by node-name when the json names it (a string child is a
// reference by node-name), else by driver and by filename: the same json
// (the parent's json embeds its child's full_open_options), or the child's
// innermost path.
bool describes(const Json& child, const HmpBlockEntry& node) {
    if (child.is_string()) return node.name == child.get<std::string>();
    if (!child.is_object()) return false;
    if (child.contains("node-name")) return node.name == text_at(child, "node-name");
    if (text_at(child, "driver") != node.driver) return false;
    if (const auto own = filename_json(node.file)) return *own == child;
    return !node.file.empty() && node.file == innermost_filename(child);
}

// The one node of `nodes` the child describes, or an error naming the
// device and what was looked for.
Result<HmpBlockEntry> find_node(const std::vector<HmpBlockEntry>& nodes, const Json& child,
                                std::string_view device) {
    std::vector<const HmpBlockEntry*> found;
    for (const HmpBlockEntry& node : nodes)
        if (describes(child, node)) found.push_back(&node);
    const std::string wanted =
        child.is_object() ? text_at(child, "driver") + " node of " + innermost_filename(child)
                          : "node " + child.dump();
    if (found.empty()) return drive_error(device, "`info block -n` lists no " + wanted);
    if (found.size() > 1) {
        return drive_error(device, "`info block -n` lists several " + wanted + ": " +
                                       join(found, ", ", [](auto* node) { return node->name; }));
    }
    if (!found.front()->inserted) return drive_error(device, found.front()->name + " is empty");
    return *found.front();
}

// The nodes below the top node, top-down, following each json "file" child.
Result<std::vector<HmpBlockEntry>> chain_below(const HmpBlockEntry& top,
                                               std::string_view nodes_text,
                                               std::string_view device) {
    const auto options = filename_json(top.file);
    if (!options || !options->contains("file")) {
        return drive_error(device,
                           "the throttle node's filename is not JSON naming its file "
                           "child (QEMU cuts a filename at 4095 bytes): \"" +
                               top.file + "\"");
    }
    const std::vector<HmpBlockEntry> nodes = read_hmp_block_entries(nodes_text);
    std::vector<HmpBlockEntry> chain;
    const Json* child = &options->at("file");
    while (chain.size() < kMaxChainDepth) {
        DS_ASSIGN_OR_RETURN(HmpBlockEntry node, find_node(nodes, *child, device));
        chain.push_back(std::move(node));
        if (!child->is_object() || !child->contains("file")) break;
        child = &child->at("file");
    }
    return chain;
}

std::string cache_line_text(const QemuCacheFlags& flags) {
    return std::string(flags.writeback ? "writeback" : "writethrough") +
           (flags.direct ? ", direct" : "") + (flags.no_flush ? ", ignore flushes" : "");
}

// The effective cache mode: the device's write cache (only the BlockBackend
// shows it) with the file node's direct and no-flush (the node that does
// the I/O); the format node must show the same flags, as qemu-server sets
// them (generate_format_blockdev copies the file node's cache options).
Result<std::string> chain_cache_mode(const HmpBlockEntry& top, const HmpBlockEntry& format,
                                     const HmpBlockEntry& file, std::string_view device) {
    const QemuCacheFlags& low = *file.cache;
    const QemuCacheFlags& high = *format.cache;
    if (low.direct != high.direct || low.no_flush != high.no_flush) {
        return drive_error(device, "`info block -n`: format node " + format.name + " (" +
                                       format.driver + ") shows Cache mode \"" +
                                       cache_line_text(high) + "\", file node " + file.name + " (" +
                                       file.driver + ") \"" + cache_line_text(low) +
                                       "\"; the chain's nodes disagree");
    }
    return cache_mode_from_flags(low.direct, top.cache->writeback, low.no_flush);
}

// The detect zeroes every node of the chain shows (add_common_options sets
// it on each), or an error naming the nodes that differ.
Result<std::string> chain_detect_zeroes(const HmpBlockEntry& top,
                                        const std::vector<HmpBlockEntry>& chain,
                                        std::string_view device) {
    for (const HmpBlockEntry& node : chain) {
        if (node.detect_zeroes == top.detect_zeroes) continue;
        return drive_error(device, "detect zeroes differs along the chain: " + top.name + " " +
                                       top.detect_zeroes + ", " + node.name + " " +
                                       node.detect_zeroes);
    }
    return top.detect_zeroes;
}

// The -blockdev chain under the throttle node `top`.
Result<Json> read_blockdev_chain(const HmpBlockEntry& top, const HmpDriveTexts& texts,
                                 std::string_view device) {
    if (!texts.info_block_nodes) {
        return drive_error(device,
                           "a -blockdev chain (throttle node) shows its cache mode only "
                           "in `info block -n`, which was not read");
    }
    DS_ASSIGN_OR_RETURN(auto chain, chain_below(top, *texts.info_block_nodes, device));
    const HmpBlockEntry& file = chain.back();
    const HmpBlockEntry& format = chain.size() > 1 ? chain[chain.size() - 2] : file;
    DS_ASSIGN_OR_RETURN(std::string cache, chain_cache_mode(top, format, file, device));
    DS_ASSIGN_OR_RETURN(std::string zeroes, chain_detect_zeroes(top, chain, device));
    const std::string nodes = format.name + ", " + file.name;
    Json settings = {{"image_format", format.driver},
                     {"cache", cache},
                     {"detect_zeroes", zeroes},
                     {"unseen", Json::object()}};
    settings["sources"] = {
        {"image_format", "info block -n driver of format node " + format.name},
        {"cache",
         "info block Cache mode writeback/writethrough (device write cache) + info "
         "block -n Cache mode direct/ignore flushes of " +
             nodes},
        {"detect_zeroes", "info block and info block -n Detect zeroes of " + top.name + ", " +
                              nodes + (zeroes == "off" ? " (none printed: off)" : "")}};
    for (const ThrottleField& field : kThrottleFields)
        settings["unseen"][std::string(field.key)] = kLimitUnseen;
    return settings;
}

// aio and iothread always, discard unless detect_zeroes=unmap showed it.
void add_common_unseen(Json& settings) {
    if (!settings.contains("unseen")) settings["unseen"] = Json::object();
    settings["unseen"]["aio"] = kAioUnseen;
    settings["unseen"]["iothread"] = kIothreadUnseen;
    if (!add_discard_implied(settings)) settings["unseen"]["discard"] = kDiscardUnseen;
}

}  // namespace

Result<Json> parse_qemu_drive_view(const HmpDriveTexts& texts, std::string_view device) {
    DS_ASSIGN_OR_RETURN(const HmpBlockEntry top,
                        read_hmp_block_entry(texts.info_block, device, "info block"));
    Result<Json> view = top.driver == "throttle" ? read_blockdev_chain(top, texts, device)
                                                 : parse_info_block(texts.info_block, device);
    if (!view.ok()) return view;
    Json settings = std::move(view).value();
    add_common_unseen(settings);
    return settings;
}

}  // namespace ds
