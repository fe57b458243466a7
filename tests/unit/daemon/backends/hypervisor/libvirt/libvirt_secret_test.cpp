#include "daemon/backends/hypervisor/libvirt/libvirt_secret.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/temp_dir.h"

namespace ds {
namespace {

// A keyring as `ceph auth get-or-create ... -o FILE` writes it, with a second
// user before ours. The key is Ceph's encoding of a made-up secret: type 1
// (AES), a creation time, length 16, then 16 bytes (0x00..0x0f).
constexpr const char* kKeyring =
    "[client.admin]\n"
    "\tkey = AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\n"
    "\tcaps mon = \"allow *\"\n"
    "[client.disksweep]\n"
    "\tkey = AQCPpQ1rAAAAABAAAAECAwQFBgcICQoLDA0ODw==\n"
    "\tcaps mon = \"profile rbd\"\n";

// The 28 bytes that key stands for.
std::string expected_disksweep_key() {
    const unsigned char bytes[] = {0x01, 0x00,                                      // type
                                   0x8f, 0xa5, 0x0d, 0x6b, 0x00, 0x00, 0x00, 0x00,  // created
                                   0x10, 0x00,                                      // length
                                   0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
                                   0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f};
    return std::string(reinterpret_cast<const char*>(bytes), sizeof bytes);
}

bool contains(const std::string& haystack, const std::string& needle) {
    return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("keyring: the key of the named client, decoded from base64", "[libvirt_secret]") {
    auto key = cephx_key_from_keyring(kKeyring, "disksweep");
    REQUIRE(key.ok());
    CHECK(key->bytes() == expected_disksweep_key());
    auto admin = cephx_key_from_keyring(kKeyring, "admin");
    REQUIRE(admin.ok());
    CHECK(admin->bytes().size() == 28);
    CHECK(admin->bytes() != key->bytes());
}

TEST_CASE("keyring: spacing, comments and CRLF are Ceph's INI syntax", "[libvirt_secret]") {
    const std::string text =
        "# written by hand\r\n"
        "; another comment\r\n"
        "[ client.disksweep ]\r\n"
        "key=AQCPpQ1rAAAAABAAAAECAwQFBgcICQoLDA0ODw==\r\n";
    auto key = cephx_key_from_keyring(text, "disksweep");
    REQUIRE(key.ok());
    CHECK(key->bytes() == expected_disksweep_key());
}

TEST_CASE("keyring: a missing user, a missing key or a bad key is refused without the key",
          "[libvirt_secret]") {
    auto missing_user = cephx_key_from_keyring(kKeyring, "nobody");
    REQUIRE_FALSE(missing_user.ok());
    CHECK(missing_user.error().code == errc::kInvalidArgument);
    CHECK(contains(missing_user.error().message, "client.nobody"));

    // The key of another section does not count.
    auto no_key = cephx_key_from_keyring("[client.a]\nkey = AQAA\n[client.b]\ncaps = x\n", "b");
    REQUIRE_FALSE(no_key.ok());
    CHECK(contains(no_key.error().message, "client.b"));

    const char* bad_keys[] = {"AQCPpQ1r!AAAABAAAAECAwQFBgcICQoLDA0ODw==",  // not the alphabet
                              "AQCPpQ1rAAAAABAAAAECAwQFBgcICQoLDA0ODw=",   // not 4n chars
                              "AQCPpQ1rAAAAABAAAAECAwQFBgcICQoLDA0O=Dw=",  // '=' inside
                              "===="};
    for (const char* bad : bad_keys) {
        INFO(bad);
        auto decoded = cephx_key_from_keyring(std::string("[client.u]\nkey = ") + bad + "\n", "u");
        REQUIRE_FALSE(decoded.ok());
        CHECK(decoded.error().code == errc::kInvalidArgument);
        CHECK_FALSE(contains(decoded.error().message, bad));
        CHECK_FALSE(contains(decoded.error().message, "AQCP"));
    }
}

TEST_CASE("keyring file: read, and errors name the path but never the key", "[libvirt_secret]") {
    const test::TempDir dir;
    const std::string path = (dir.path() / "client.disksweep.keyring").string();
    std::ofstream(path) << kKeyring;
    auto key = read_cephx_key(path, "disksweep");
    REQUIRE(key.ok());
    CHECK(key->bytes() == expected_disksweep_key());

    auto wrong_user = read_cephx_key(path, "other");
    REQUIRE_FALSE(wrong_user.ok());
    CHECK(contains(wrong_user.error().message, path));
    CHECK_FALSE(contains(wrong_user.error().message, "AQ"));

    auto missing = read_cephx_key((dir.path() / "absent").string(), "disksweep");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().code == errc::kIo);
    CHECK(contains(missing.error().message, "absent"));
}

TEST_CASE("secret bytes are wiped when moved from", "[libvirt_secret]") {
    SecretBytes first(std::string("not really a key"));
    SecretBytes second(std::move(first));
    CHECK(second.bytes() == "not really a key");
    CHECK(first.bytes().empty());  // NOLINT(bugprone-use-after-move): the contract under test
    SecretBytes third;
    third = std::move(second);
    CHECK(third.bytes() == "not really a key");
    CHECK(second.bytes().empty());  // NOLINT(bugprone-use-after-move)
}

TEST_CASE("secret: a user with a keyring of its own goes in a secret", "[libvirt_secret]") {
    RbdDisk disk{"pool", "image", {"127.0.0.1:6789"}, "disksweep", "/etc/ceph/k", ""};
    CHECK(rbd_key_fits_secret(disk));
    disk.keyring.clear();  // the key is wherever a ceph.conf says
    CHECK_FALSE(rbd_key_fits_secret(disk));
    disk = RbdDisk{"pool", "image", {}, "", "/etc/ceph/k", "/etc/ceph/ceph.conf"};
    CHECK_FALSE(rbd_key_fits_secret(disk));  // no user to name in <auth>
}

TEST_CASE("secret: usage names start with the guest's name and lead back to it",
          "[libvirt_secret]") {
    CHECK(rbd_secret_usage("disksweep-r17") == "disksweep-r17 rbd");
    CHECK(guest_of_rbd_secret_usage("disksweep-r17 rbd") == "disksweep-r17");
    CHECK_FALSE(guest_of_rbd_secret_usage("disksweep-r17"));
    CHECK_FALSE(guest_of_rbd_secret_usage(" rbd"));
    CHECK_FALSE(guest_of_rbd_secret_usage("client.admin secret"));
}

TEST_CASE("secret XML: ephemeral, private, usage ceph named after the guest", "[libvirt_secret]") {
    const std::string xml = rbd_secret_xml("disksweep-r17");
    CHECK(xml.starts_with("<secret ephemeral='yes' private='yes'>"));
    CHECK(contains(xml, "<usage type='ceph'>\n    <name>disksweep-r17 rbd</name>\n  </usage>"));
    CHECK_FALSE(contains(xml, "<uuid>"));  // libvirt makes one
    CHECK(contains(rbd_secret_xml("a&b"), "<name>a&amp;b rbd</name>"));
}

}  // namespace ds
