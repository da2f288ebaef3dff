# What `cmake --install` and the Debian package (cpack) install: the `sluice` command, the library
# (libsluice.so, include/sluice/, a CMake package for find_package(Sluice CONFIG) with the target
# Sluice::sluice, and a pkg-config file), and a systemd unit running `sluice serve` with its
# config file in /etc/sluice (PREFIX/etc/sluice outside /usr). docs/library.md.
include(CMakePackageConfigHelpers)

install(TARGETS sluice RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS sluice_library EXPORT SluiceTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/sluice DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/generated/sluice/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sluice)

set(SLUICE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Sluice)
install(EXPORT SluiceTargets NAMESPACE Sluice:: DESTINATION ${SLUICE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/SluiceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/SluiceConfig.cmake INSTALL_DESTINATION ${SLUICE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/SluiceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/SluiceConfig.cmake ${PROJECT_BINARY_DIR}/SluiceConfigVersion.cmake
  DESTINATION ${SLUICE_CMAKE_DIR})

configure_file(${PROJECT_SOURCE_DIR}/cmake/sluice.pc.in ${PROJECT_BINARY_DIR}/sluice.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/sluice.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The service's files are placed at install time, when the prefix is known: /etc and the unit's
# ExecStart follow the prefix (cpack installs with the prefix /usr; see below).
install(CODE "set(SLUICE_PACKAGING_DIR \"${PROJECT_SOURCE_DIR}/packaging\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/install_service.cmake)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sluice)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Distributed rate limiter: policies in SQL, decisions in Redis or in process")
set(CPACK_PACKAGE_CONTACT "Sluice maintainers <sluice@localhost>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/conffiles)
# Install into a staging root with the prefix /usr, so that install_service.cmake sees /usr and
# places the config file in /etc.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
include(CPack)
