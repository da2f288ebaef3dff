# Installs the service's files at install time, when the prefix is known (run by
# `cmake --install` and cpack; SLUICE_PACKAGING_DIR and SLUICE_BINARY_DIR are set by
# SluiceInstall.cmake): the config file in /etc/sluice for the prefix /usr, else
# PREFIX/etc/sluice (GNUInstallDirs' rule), and a systemd unit whose ExecStart is PREFIX/bin/sluice.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(sluice_etc /etc/sluice)
else()
  set(sluice_etc ${CMAKE_INSTALL_PREFIX}/etc/sluice)
endif()
file(INSTALL ${SLUICE_PACKAGING_DIR}/sluice.yaml DESTINATION ${sluice_etc})

set(SLUICE_BIN ${CMAKE_INSTALL_PREFIX}/bin/sluice)
set(SLUICE_CONFIG ${sluice_etc}/sluice.yaml)
# Configured in the build directory: an install script's CMAKE_CURRENT_BINARY_DIR is the
# directory `cmake --install` was run from (a source tree, say).
set(unit ${SLUICE_BINARY_DIR}/packaging/sluice.service)
configure_file(${SLUICE_PACKAGING_DIR}/sluice.service.in ${unit} @ONLY)
file(INSTALL ${unit} DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
