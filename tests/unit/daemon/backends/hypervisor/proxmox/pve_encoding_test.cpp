// How requests to PVE are spelled, and the options of a Proxmox connection:
// no server needed.
#include "daemon/backends/hypervisor/proxmox/pve_encoding.h"

#include <catch2/catch.hpp>

#include "daemon/backends/hypervisor/proxmox/pve_client.h"

namespace ds {
namespace {

const char* const kFingerprint =
    "AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:89:AB:CD:EF:01:23:45:67:"
    "89";

TEST_CASE("a drive property string is built in the order given", "[proxmox][encoding]") {
    PvePropertyString drive("local-lvm:4");
    drive.set("cache", "unsafe")
        .set("discard", "on")
        .set_flag("ssd", true)
        .set_flag("iothread", true);
    drive.set_flag("backup", false).set_number("mbps_rd", 12.5).set_integer("iops_wr", 500);
    Result<std::string> text = drive.encode();
    REQUIRE(text.ok());
    CHECK(*text ==
          "local-lvm:4,cache=unsafe,discard=on,ssd=1,iothread=1,backup=0,mbps_rd=12.5,iops_wr=500");
}

TEST_CASE("numbers are written as PVE reads them", "[proxmox][encoding]") {
    CHECK(pve_number_text(100) == "100");
    CHECK(pve_number_text(0.5) == "0.5");
    CHECK(pve_number_text(1e21) == "1e+21");
    CHECK(pve_number_text(std::numeric_limits<double>::infinity()).empty());
}

TEST_CASE("a property string that PVE would misread is refused, naming the key",
          "[proxmox][encoding]") {
    auto refused = [](const PvePropertyString& text, const std::string& fragment) {
        Result<std::string> encoded = text.encode();
        REQUIRE_FALSE(encoded.ok());
        CHECK(encoded.error().code == errc::kInvalidArgument);
        CHECK_THAT(encoded.error().message, Catch::Contains(fragment));
    };
    refused(PvePropertyString("a").set("serial", "x,y"), "'serial' holds a ','");
    refused(PvePropertyString("a").set("Cache", "none"), "'Cache' is not a PVE option name");
    refused(PvePropertyString("a").set("cache", ""), "'cache' has an empty value");
    refused(PvePropertyString("a=b"), "default value");
    refused(PvePropertyString("a").set_number("mbps", std::nan("")), "'mbps' has an empty value");
}

TEST_CASE("a property string as PVE prints it reads back", "[proxmox][encoding]") {
    Result<PvePropertyString> drive =
        PvePropertyString::parse("local-lvm:vm-101-disk-1,cache=unsafe,size=4G,ssd=1");
    REQUIRE(drive.ok());
    CHECK(drive->default_value() == "local-lvm:vm-101-disk-1");
    CHECK(drive->get("cache") == "unsafe");
    CHECK(drive->get("ssd") == "1");
    CHECK_FALSE(drive->get("discard").has_value());
    CHECK_FALSE(PvePropertyString::parse("a,b,cache=none").ok());
}

TEST_CASE("query parameters: booleans 0/1, arrays as repeated keys, all percent-encoded",
          "[proxmox][encoding]") {
    PveParams params;
    params.set_flag("full", true).set_flag("purge", false).set_integer("newid", 101);
    params.set_array("command", {"/usr/bin/disksweep-agent", "--job", "/run/job one.json"});
    params.set_property_string("scsi1", PvePropertyString("local-lvm:4").set("cache", "unsafe"));
    params.set_number("mbps", 12.5).set_number("iops", 100);
    Result<std::string> query = params.encode_query();
    REQUIRE(query.ok());
    CHECK(*query ==
          "full=1&purge=0&newid=101&command=%2Fusr%2Fbin%2Fdisksweep-agent&command=--job&"
          "command=%2Frun%2Fjob%20one.json&scsi1=local-lvm%3A4%2Ccache%3Dunsafe&mbps=12.5&"
          "iops=100");
}

TEST_CASE("body parameters are JSON: empty values, one-item arrays, typed numbers",
          "[proxmox][encoding]") {
    // pve-http-server's decode_urlencoded would drop `content=` (split(/=/)),
    // and a single `command=x` would be a string, not an array: in JSON both
    // arrive as they are.
    PveParams params;
    params.set("file", "/run/disksweep-job.json").set("content", "");
    params.set_array("command", {"/bin/true"});
    params.set_flag("full", true).set_integer("newid", 101).set_number("mbps", 12.5);
    params.set_number("iops", 100);
    params.set("odd", "a=b&c;d");
    Result<std::string> body = params.encode_json();
    REQUIRE(body.ok());
    CHECK(Json::parse(*body) == Json{{"file", "/run/disksweep-job.json"},
                                     {"content", ""},
                                     {"command", {"/bin/true"}},
                                     {"full", 1},
                                     {"newid", 101},
                                     {"mbps", 12.5},
                                     {"iops", 100},
                                     {"odd", "a=b&c;d"}});
    CHECK(Json::parse(*body)["iops"].is_number_integer());
    CHECK(PveParams().encode_json().value() == "{}");
}

TEST_CASE("an empty value cannot go into a query string, and says why", "[proxmox][encoding]") {
    Result<std::string> query = PveParams().set("file", "x").set("content", "").encode_query();
    REQUIRE_FALSE(query.ok());
    CHECK(query.error().code == errc::kInvalidArgument);
    CHECK_THAT(query.error().message, Catch::Contains("'content'"));
    CHECK_THAT(query.error().message, Catch::Contains("decode_urlencoded"));
    CHECK_FALSE(PveParams().set_array("command", {"a", ""}).encode_query().ok());
}

TEST_CASE("a key given twice or a number that is not finite is refused", "[proxmox][encoding]") {
    auto twice = PveParams().set("name", "a").set("name", "b");
    REQUIRE_FALSE(twice.encode_json().ok());
    CHECK_THAT(twice.encode_json().error().message, Catch::Contains("'name': given twice"));
    auto nan = PveParams().set_number("mbps", std::nan(""));
    REQUIRE_FALSE(nan.encode_json().ok());
    CHECK_THAT(nan.encode_query().error().message, Catch::Contains("'mbps': not a finite number"));
}

TEST_CASE("a bad property string makes the whole parameter list fail", "[proxmox][encoding]") {
    PveParams params;
    params.set_property_string("scsi1", PvePropertyString("local-lvm:4").set("serial", "a,b"));
    for (const Result<std::string>& encoded : {params.encode_query(), params.encode_json()}) {
        REQUIRE_FALSE(encoded.ok());
        CHECK_THAT(encoded.error().message, Catch::StartsWith("scsi1: "));
    }
}

TEST_CASE("paths encode each segment (a UPID has ':' '@' '!')", "[proxmox][encoding]") {
    CHECK(pve_path({"nodes", "pve1", "tasks",
                    "UPID:pve1:00001000:0027944C:6B0DA50A:qmclone:9000:root@pam!ds:", "status"}) ==
          "/nodes/pve1/tasks/"
          "UPID%3Apve1%3A00001000%3A0027944C%3A6B0DA50A%3Aqmclone%3A9000%3Aroot%40pam%21ds%3A/"
          "status");
}

TEST_CASE("UPIDs are read as PVE::UPID writes them", "[proxmox][encoding]") {
    Result<PveUpid> upid =
        parse_pve_upid("UPID:pve-2:0001A2B3:0027944C:6B0DA50A:qmstart:101:root@pam!ds:");
    REQUIRE(upid.ok());
    CHECK(upid->node == "pve-2");
    CHECK(upid->type == "qmstart");
    CHECK(upid->id == "101");
    CHECK(upid->user == "root@pam!ds");
    CHECK_FALSE(parse_pve_upid("UPID:pve1:1:2:3:qmstart:101:root@pam:").ok());
    CHECK_FALSE(parse_pve_upid("not a upid").ok());
}

TEST_CASE("connection options from the config's KEY=VALUE pairs", "[proxmox][options]") {
    Result<PveClientOptions> options =
        pve_client_options({{"host", "pve1.example.org"},
                            {"port", "8007"},
                            {"token", "disksweep@pve!sweeps"},
                            {"token_file", "/etc/disksweep/pve.secret"},
                            {"fingerprint",
                             "ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:89:ab:cd:ef:01:23:45:67:"
                             "89:ab:cd:ef:01:23:45:67:89"},
                            {"timeout", "30"}});
    REQUIRE(options.ok());
    CHECK(options->host == "pve1.example.org");
    CHECK(options->port == 8007);
    CHECK(options->token_id == "disksweep@pve!sweeps");
    CHECK(options->fingerprint == kFingerprint);
    CHECK(options->request_timeout == std::chrono::seconds(30));
    CHECK(pve_option_keys().size() == 8);
}

TEST_CASE("connection options that cannot be right are refused, naming the key",
          "[proxmox][options]") {
    std::map<std::string, std::string> good = {{"host", "pve1"},
                                               {"token", "disksweep@pve!sweeps"},
                                               {"token_file", "/etc/disksweep/pve.secret"},
                                               {"ca_file", "/etc/disksweep/pve-ca.pem"}};
    REQUIRE(pve_client_options(good).ok());
    auto refused = [&](const std::string& key, const std::string& value,
                       const std::string& fragment) {
        auto options = good;
        if (value.empty()) {
            options.erase(key);
        } else {
            options[key] = value;
        }
        Result<PveClientOptions> parsed = pve_client_options(options);
        REQUIRE_FALSE(parsed.ok());
        CHECK(parsed.error().code == errc::kInvalidArgument);
        CHECK_THAT(parsed.error().message, Catch::Contains(fragment));
        return parsed.error().message;
    };
    refused("ca_file", "", "never taken on trust");
    refused("token", "disksweep@pve", "USER@REALM!TOKENID");
    refused("fingerprint", "AB:CD", "32 hex bytes");
    refused("token_file", "relative/path", "absolute path");
    refused("port", "0", "from 1 to 65535");
    refused("colour", "blue", "unknown key");
    std::string message = refused("secret", "c0ffee-secret-value", "token_file=PATH");
    CHECK_THAT(message, !Catch::Contains("c0ffee-secret-value"));
}

}  // namespace
}  // namespace ds
