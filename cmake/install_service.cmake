# Installs the service's files at install time, when the prefix is known (run by
# `cmake --install` and cpack; SLUICE_PACKAGING_DIR is set by SluiceInstall.cmake): the config
# file in /etc/sluice for the prefix /usr, else PREFIX/etc/sluice (GNUInstallDirs' rule), and a
# systemd unit whose ExecStart is PREFIX/bin/sluice.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(sluice_etc /etc/sluice)
else()
  set(sluice_etc ${CMAKE_INSTALL_PREFIX}/etc/sluice)
endif()
file(INSTALL ${SLUICE_PACKAGING_DIR}/sluice.yaml DESTINATION ${sluice_etc})

set(SLUICE_BIN ${CMAKE_INSTALL_PREFIX}/bin/sluice)
set(SLUICE_CONFIG ${sluice_etc}/sluice.yaml)
set(unit ${CMAKE_CURRENT_BINARY_DIR}/sluice.service)
configure_file(${SLUICE_PACKAGING_DIR}/sluice.service.in ${unit} @ONLY)
file(INSTALL ${unit} DESTINATION ${CMAKE_INSTALL_PREFIX}/lib/systemd/system)
