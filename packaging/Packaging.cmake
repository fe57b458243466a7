# Installation and the Debian package: `cpack` (in the build directory)
# writes disksweep_VERSION~debN_ARCH.deb, N the build host's Debian release. Included at the end of the top-level
# CMakeLists.txt, after the targets exist.
#
# What goes where is the table of install() rules below; the package's
# metadata follows it. Directories that are Debian's rather than CMake's
# (/etc, /lib/systemd) are absolute; everything else is under the prefix
# (/usr in the package).

set(DISKSWEEP_PACKAGING_DIR ${CMAKE_CURRENT_LIST_DIR})
set(DISKSWEEP_SHARE_DIR share/disksweep)

# ---- programs --------------------------------------------------------------
install(TARGETS disksweepd hostctl disksweep-replay RUNTIME DESTINATION bin)
# The guest agent runs in the guest, not on the host: it is the
# AGENT_BINARY that guest/build-image.sh puts into the initramfs.
install(TARGETS disksweep-agent RUNTIME DESTINATION lib/disksweep)

# ---- the service -----------------------------------------------------------
install(FILES ${PROJECT_SOURCE_DIR}/systemd/disksweepd.service DESTINATION /lib/systemd/system)
install(FILES ${DISKSWEEP_PACKAGING_DIR}/sysusers.d/disksweep.conf DESTINATION lib/sysusers.d)
install(FILES ${DISKSWEEP_PACKAGING_DIR}/tmpfiles.d/disksweep.conf DESTINATION lib/tmpfiles.d)
# A conffile (packaging/debian/conffiles): local edits survive upgrades.
install(FILES ${PROJECT_SOURCE_DIR}/config/disksweepd.conf DESTINATION /etc/disksweep)

# ---- data: example sweeps and the guest image builder -----------------------
install(DIRECTORY ${PROJECT_SOURCE_DIR}/config/sweeps/ DESTINATION ${DISKSWEEP_SHARE_DIR}/sweeps
        FILES_MATCHING PATTERN "*.toml")
# The whole of guest/, so a packaged install can build its image; the
# scripts keep their execute bits.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/guest/ DESTINATION ${DISKSWEEP_SHARE_DIR}/guest
        USE_SOURCE_PERMISSIONS)

# ---- documentation -----------------------------------------------------------
# Man pages: docs/man/NAME.SECTION, with @PROJECT_VERSION@ filled in and
# gzip'ed as Debian wants them (-n: no name or time stamp, reproducible).
set(DISKSWEEP_MAN_PAGES disksweepd.8 hostctl.1 disksweep-replay.1)
set(DISKSWEEP_MAN_DIR ${PROJECT_BINARY_DIR}/packaging/man)
set(DISKSWEEP_MAN_ARCHIVES)
foreach(page ${DISKSWEEP_MAN_PAGES})
  configure_file(${PROJECT_SOURCE_DIR}/docs/man/${page} ${DISKSWEEP_MAN_DIR}/${page} @ONLY)
  add_custom_command(OUTPUT ${DISKSWEEP_MAN_DIR}/${page}.gz
                     COMMAND gzip -9 -n -f -k ${DISKSWEEP_MAN_DIR}/${page}
                     DEPENDS ${DISKSWEEP_MAN_DIR}/${page}
                     COMMENT "Compressing man page ${page}")
  string(REGEX REPLACE "^.*\\.([1-9])$" "\\1" section ${page})
  install(FILES ${DISKSWEEP_MAN_DIR}/${page}.gz DESTINATION share/man/man${section})
  list(APPEND DISKSWEEP_MAN_ARCHIVES ${DISKSWEEP_MAN_DIR}/${page}.gz)
endforeach()
add_custom_target(disksweep_man_pages ALL DEPENDS ${DISKSWEEP_MAN_ARCHIVES})

install(FILES ${DISKSWEEP_PACKAGING_DIR}/bash-completion/hostctl
        DESTINATION share/bash-completion/completions)
# The unit's Documentation= points at the README.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/disksweep)

# ---- the Debian package ------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME disksweep)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The .deb is built per Debian release: dpkg-shlibdeps takes its library
# dependencies from the build host (Debian 13 renamed many libraries for
# 64-bit time_t, e.g. libvirt0 -> libvirt0t64), so a package built on one
# release does not install on the other. Its version says which release it
# is for, as Debian's backports do: 0.1.0~deb12, 0.1.0~deb13 ('~' sorts
# before the bare version). The release is /etc/os-release's VERSION_ID;
# a host without one (testing, unstable, not Debian) builds the bare version.
set(DISKSWEEP_DEB_RELEASE "")
if(EXISTS /etc/os-release)
  file(STRINGS /etc/os-release disksweep_os_id REGEX "^ID=")
  file(STRINGS /etc/os-release disksweep_os_version REGEX "^VERSION_ID=")
  string(REGEX REPLACE "^VERSION_ID=\"?([0-9]+)\"?$" "\\1" disksweep_os_version "${disksweep_os_version}")
  if(disksweep_os_id STREQUAL "ID=debian" AND disksweep_os_version MATCHES "^[0-9]+$")
    set(DISKSWEEP_DEB_RELEASE "~deb${disksweep_os_version}")
  endif()
endif()
if(NOT DISKSWEEP_DEB_RELEASE)
  message(STATUS "packaging: no Debian release in /etc/os-release: the .deb's version has no ~debN suffix")
endif()
set(CPACK_DEBIAN_PACKAGE_VERSION ${PROJECT_VERSION}${DISKSWEEP_DEB_RELEASE})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "disksweep developers <disksweep@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "storage configuration sweeps for virtual machines, measured in real guests")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "disksweepd answers, with measurements, which storage configuration a\n\
virtual machine's workload should run on. It boots real guests with the\n\
disk settings swept (cache mode, discard, SSD emulation, bus and\n\
controller, IO thread, aio) and the guest filesystem swept (ext4, xfs,\n\
btrfs with their options), runs fio, MariaDB's test-ATIS or sysbench in\n\
them, verifies that every setting was in force, records every run in\n\
SQLite and compares configurations with mean, spread and confidence\n\
intervals. hostctl is its command-line client.")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Binaries as shipped: no debug info (the build tree keeps it).
set(CPACK_STRIP_FILES TRUE)

# Shared libraries: dpkg-shlibdeps computes them from the binaries. What the
# daemon runs rather than links is listed here, one table:
#   Depends     QEMU (qemu-img too) and libvirt's QEMU driver, which the
#               embedded driver loads; passwd for the postinst's fallback
#               (groupadd/useradd where systemd-sysusers is missing).
#   Recommends  the guest image builder's tools (guest/build-image.sh
#               checks for each: mmdebstrap, mkfs.ext4/debugfs, cpio,
#               zstd; xz for the kernel's PVH ELF).
#   Suggests    storage backends (Ceph RBD: QEMU's rbd driver and the rbd
#               CLI; lvm-thin), the mariadb image variant (dpkg-source), and
#               curl for the API by hand.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "qemu-system-x86, qemu-utils, libvirt-daemon-driver-qemu, passwd")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "mmdebstrap, e2fsprogs, cpio, zstd, xz-utils")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "qemu-block-extra, ceph-common, lvm2, thin-provisioning-tools, dpkg-dev, binutils, curl")

set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${DISKSWEEP_PACKAGING_DIR}/debian/conffiles ${DISKSWEEP_PACKAGING_DIR}/debian/postinst
    ${DISKSWEEP_PACKAGING_DIR}/debian/prerm ${DISKSWEEP_PACKAGING_DIR}/debian/postrm)
# Maintainer scripts 0755 and conffiles 0644 whatever the checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

include(CPack)
