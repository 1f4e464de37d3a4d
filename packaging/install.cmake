# `cmake --install` and CPack's .deb: weft laid out as a Debian package lays
# out a daemon (docs/architecture.md, "Install"). The binary, man pages and
# examples go under the prefix by GNUInstallDirs; the files whose place
# depends on the prefix given at install time (configuration in /etc for a
# /usr prefix, the systemd units, the log directory) are placed by
# install_system_files.cmake, which runs then.
include(GNUInstallDirs)

install(TARGETS weft RUNTIME DESTINATION ${CMAKE_INSTALL_SBINDIR})

# Man pages, compressed as Debian ships them: gzip -9n stores no name and no
# time stamp, so the same page makes the same bytes.
set(weft_man_pages weft.8 weft.conf.5)
set(weft_man_outputs)
foreach(page IN LISTS weft_man_pages)
    set(compressed ${CMAKE_CURRENT_BINARY_DIR}/man/${page}.gz)
    add_custom_command(OUTPUT ${compressed}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/man
        COMMAND sh -c "gzip -9n -c \"$1\" > \"$2\"" sh
                ${PROJECT_SOURCE_DIR}/man/${page} ${compressed}
        DEPENDS ${PROJECT_SOURCE_DIR}/man/${page}
        COMMENT "Compressing man page ${page}"
        VERBATIM)
    string(REGEX MATCH "[0-9]$" section ${page})
    install(FILES ${compressed} DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
    list(APPEND weft_man_outputs ${compressed})
endforeach()
add_custom_target(weft_man_pages ALL DEPENDS ${weft_man_outputs})

file(GLOB weft_examples CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/conf/*.conf)
install(FILES ${weft_examples} DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES README.md docs/from-nginx.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Where systemd units go for a /usr (or /) prefix: Debian 12's
# systemdsystemunitdir (`pkg-config --variable=systemdsystemunitdir systemd`),
# where its nginx's unit is too; under any other prefix, PREFIX/lib/systemd/system
# (systemd reads /usr/local/lib/systemd/system as well).
set(WEFT_SYSTEMD_UNIT_DIR "" CACHE STRING
    "Where weft.service and weft.socket go (empty: /lib/systemd/system for a /usr prefix, else PREFIX/lib/systemd/system)")
configure_file(${CMAKE_CURRENT_LIST_DIR}/install_system_files.cmake.in
    ${CMAKE_CURRENT_BINARY_DIR}/install_system_files.cmake @ONLY)
install(SCRIPT ${CMAKE_CURRENT_BINARY_DIR}/install_system_files.cmake)
