# What `cmake --install` and the Debian packages (cpack) install, in three components:
#   runtime -> package `sluice`: the `sluice` command, a systemd unit running `sluice serve` with
#              its config file in /etc/sluice (PREFIX/etc/sluice outside /usr), the Prometheus
#              rules and the Grafana dashboard in share/sluice/, and whatever a subdirectory
#              installs without naming a component (the Redis module in lib/sluice);
#   library -> package `libsluice0`: libsluice.so.0 (what a program built against it runs with);
#   dev     -> package `libsluice-dev`: include/sluice/, libsluice.so, a CMake package for
#              find_package(Sluice CONFIG) with the target Sluice::sluice, and sluice.pc.
# Each package carries /usr/share/doc/<package>/copyright (DEP-5) and changelog.gz. Binaries are
# stripped into the packages, their debug symbols into <package>-dbgsym (.ddeb). With
# SLUICE_LIBRARY_ONLY only the library and dev components exist. docs/library.md, docs/deploy.md.
include(CMakePackageConfigHelpers)

set(SLUICE_PACKAGES library dev)
if(NOT SLUICE_LIBRARY_ONLY)
  list(PREPEND SLUICE_PACKAGES runtime)
  install(TARGETS sluice RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
  # The operator's guides, where the post-install message points.
  install(FILES ${PROJECT_SOURCE_DIR}/docs/deploy.md ${PROJECT_SOURCE_DIR}/docs/server.md
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/sluice COMPONENT runtime)
  # The Prometheus alert rules with their promtool tests, and the Grafana dashboard
  # (docs/monitoring.md).
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/prometheus/sluice-rules.yml
                ${PROJECT_SOURCE_DIR}/packaging/prometheus/sluice-rules.test.yml
    DESTINATION ${CMAKE_INSTALL_DATADIR}/sluice/prometheus COMPONENT runtime)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/grafana/sluice-dashboard.json
    DESTINATION ${CMAKE_INSTALL_DATADIR}/sluice/grafana COMPONENT runtime)
endif()
install(TARGETS sluice_library EXPORT SluiceTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT library NAMELINK_COMPONENT dev
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sluice DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/generated/sluice/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sluice COMPONENT dev)

set(SLUICE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Sluice)
install(EXPORT SluiceTargets NAMESPACE Sluice:: DESTINATION ${SLUICE_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/SluiceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/SluiceConfig.cmake INSTALL_DESTINATION ${SLUICE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SluiceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SluiceConfig.cmake ${PROJECT_BINARY_DIR}/SluiceConfigVersion.cmake
  DESTINATION ${SLUICE_CMAKE_DIR} COMPONENT dev)

# sluice.pc is relocatable: its prefix is found from its own place, LIBDIR/pkgconfig, so the
# path back to the prefix has one ".." per directory of LIBDIR, plus one for pkgconfig/.
file(RELATIVE_PATH SLUICE_PC_TO_PREFIX "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
configure_file(${PROJECT_SOURCE_DIR}/cmake/sluice.pc.in ${PROJECT_BINARY_DIR}/sluice.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/sluice.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT dev)

# The service's files are placed at install time, when the prefix is known: /etc and the unit's
# ExecStart follow the prefix (cpack installs with the prefix /usr; see below).
if(NOT SLUICE_LIBRARY_ONLY)
  install(CODE "set(SLUICE_PACKAGING_DIR \"${PROJECT_SOURCE_DIR}/packaging\")
                set(SLUICE_BINARY_DIR \"${PROJECT_BINARY_DIR}\")" COMPONENT runtime)
  install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/install_service.cmake COMPONENT runtime)
endif()

# Debian's per-package documents: the copyright file (DEP-5) and a changelog, compressed without
# a timestamp (gzip -n) as Debian policy asks.
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in
  ${PROJECT_BINARY_DIR}/packaging/changelog @ONLY)
execute_process(COMMAND gzip -9nc ${PROJECT_BINARY_DIR}/packaging/changelog
  OUTPUT_FILE ${PROJECT_BINARY_DIR}/packaging/changelog.gz COMMAND_ERROR_IS_FATAL ANY)
set(SLUICE_PACKAGE_NAME_runtime sluice)
set(SLUICE_PACKAGE_NAME_library libsluice${PROJECT_VERSION_MAJOR})
set(SLUICE_PACKAGE_NAME_dev libsluice-dev)
foreach(component IN LISTS SLUICE_PACKAGES)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright
                ${PROJECT_BINARY_DIR}/packaging/changelog.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${SLUICE_PACKAGE_NAME_${component}}
    COMPONENT ${component})
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sluice)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Sluice maintainers <maintainers@users.noreply.a-seed-da127713.example>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${SLUICE_PACKAGES})
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A shlibs file for every package with a versioned shared library (libsluice0): programs built
# against it depend on libsluice0 (>= this version).
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# Stripped binaries in the packages, their symbols in <package>-dbgsym_VERSION_ARCH.ddeb
# (CPack splits them by build id into /usr/lib/debug/.build-id/, where gdb looks).
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME sluice)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "distributed rate limiter: server, CLI and systemd unit\n"
    "Sluice decides whether a caller may do something now, under policies\n"
    "kept in SQL, atomically in Redis (or a Redis Cluster) or in process.\n"
    "This package holds the sluice command (sluice serve: HTTP/JSON, Envoy's\n"
    "RLS v3 over gRPC, an admin API and web console), its configuration in\n"
    "/etc/sluice and a systemd unit, which installing does not enable.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles ${PROJECT_SOURCE_DIR}/packaging/debian/postinst)

set(CPACK_DEBIAN_LIBRARY_PACKAGE_NAME ${SLUICE_PACKAGE_NAME_library})
set(CPACK_DEBIAN_LIBRARY_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_LIBRARY_DESCRIPTION
    "distributed rate limiter: shared library\n"
    "libsluice lets a C++ program decide rate limits in process, on Redis or\n"
    "through a sluice serve, with the policies and algorithms of the server.")
# ldconfig runs once per dpkg run through the trigger (lintian: lacks-ldconfig-trigger).
set(CPACK_DEBIAN_LIBRARY_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/debian/triggers)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libsluice-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${SLUICE_PACKAGE_NAME_library} (= ${PROJECT_VERSION})")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "distributed rate limiter: development files\n"
    "Headers (include/sluice/), the CMake package (find_package(Sluice),\n"
    "target Sluice::sluice) and a pkg-config file (sluice.pc) for building\n"
    "C++20 programs against libsluice.")

# Install into a staging root with the prefix /usr, so that install_service.cmake sees /usr and
# places the config file in /etc.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
include(CPack)
