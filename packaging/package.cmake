# `cpack` in a build directory makes weft's .deb from what `cmake --install`
# installs, under the /usr prefix (install_system_files.cmake then puts the
# configuration in /etc). The maintainer scripts are packaging/debian's.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME weft)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "weft maintainers <maintainers@users.noreply.a-seed-3f9eb58a.example>"
    CACHE STRING "The .deb's Maintainer")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_DESCRIPTION
    "weft serves static files and passes PHP to PHP-FPM over FastCGI, with one
event loop per core and a coroutine per connection. This package runs it
under systemd (weft.service, optionally socket-activated by weft.socket),
serving /var/www/html on port 80 as the user www-data; its configuration is
/etc/weft/weft.conf, described in weft.conf(5).")
# The .deb's own paths: the prefix the install script sees is /usr, and
# DESTDIR is the staging tree, as with `cmake --install --prefix /usr`.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION httpd)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends from the binary's libraries (dpkg-shlibdeps, from dpkg-dev).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_PROVIDES httpd)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "php-fpm, logrotate")
# conffiles first: dpkg keeps an administrator's edits of those across upgrades.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/debian/conffiles
    ${CMAKE_CURRENT_LIST_DIR}/debian/postinst
    ${CMAKE_CURRENT_LIST_DIR}/debian/prerm
    ${CMAKE_CURRENT_LIST_DIR}/debian/postrm)
# Maintainer scripts 0755, the rest of the control files 0644, whatever the
# checkout's modes.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
