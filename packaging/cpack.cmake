# packaging/cpack.cmake: the Debian packages of redlock-c, made by CPack's DEB
# generator from the install components of the top-level CMakeLists.txt:
#
#   libredlock0    component runtime  the shared library (SONAME libredlock.so.0)
#   libredlock-dev component dev      headers, libredlock.a, the libredlock.so link,
#                                     redlock.pc, the CMake package, the API
#                                     reference (man 3, HTML), the guides
#                                     (docs/*.md) and the examples' sources
#   redlock-tools  component tools    the `redlock` CLI and its man page
#
# Each package carries /usr/share/doc/<package>/copyright.  The version is
# PROJECT_VERSION (project() in CMakeLists.txt), the only place it is written;
# scripts/package.sh reads it back from the CPackConfig.cmake written here.
# docs/packaging.md says how the packages are made, installed and checked.
#
# Meant for a build configured with -DCMAKE_INSTALL_PREFIX=/usr (scripts/package.sh
# does it); the packages contain what `cmake --install` puts under that prefix.

# include/redlock.h restates the version for C programs: it must agree, or the
# packages' version and the library's redlock_version() would differ.
file(STRINGS "${PROJECT_SOURCE_DIR}/include/redlock.h" _redlock_h_version
     REGEX "^#define REDLOCK_VERSION_STRING \"[^\"]*\"$")
string(REGEX REPLACE "^#define REDLOCK_VERSION_STRING \"([^\"]*)\"$" "\\1" _redlock_h_version
       "${_redlock_h_version}")
if(NOT _redlock_h_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "redlock: include/redlock.h says version '${_redlock_h_version}', "
                      "CMakeLists.txt's project() says ${PROJECT_VERSION}: make them agree")
endif()

set(REDLOCK_PACKAGE_CONTACT "redlock-c maintainers <maintainers@redlock-c.invalid>" CACHE STRING
    "Maintainer field of the Debian packages")

# The copyright file of each package, in Debian's machine-readable format: the
# license text of LICENSE, each line indented, blank lines as " .".
file(READ "${PROJECT_SOURCE_DIR}/LICENSE" _redlock_license)
string(REGEX MATCH "Copyright \\(c\\) [^\n]*" _redlock_copyright_line "${_redlock_license}")
string(REGEX REPLACE "^Copyright \\(c\\) " "" REDLOCK_COPYRIGHT_HOLDER "${_redlock_copyright_line}")
string(REGEX REPLACE "^MIT License\n+" "" _redlock_license "${_redlock_license}")
string(REGEX REPLACE "Copyright \\(c\\) [^\n]*\n+" "" _redlock_license "${_redlock_license}")
string(STRIP "${_redlock_license}" _redlock_license)
string(REGEX REPLACE "\n\n" "\n.\n" _redlock_license "${_redlock_license}")
string(REGEX REPLACE "\n" "\n " REDLOCK_LICENSE_TEXT "${_redlock_license}")
set(REDLOCK_COPYRIGHT_FILE "${PROJECT_BINARY_DIR}/packaging/copyright")
configure_file("${CMAKE_CURRENT_LIST_DIR}/copyright.in" "${REDLOCK_COPYRIGHT_FILE}" @ONLY)

set(_redlock_deb_version "${PROJECT_VERSION}-1") # upstream version - Debian revision
set(_redlock_runtime_pkg "libredlock${REDLOCK_SOVERSION}")
set(_redlock_components runtime dev)
if(REDLOCK_BUILD_TOOLS)
  list(APPEND _redlock_components tools)
endif()
# The copyright files: only in the packages (EXCLUDE_FROM_ALL keeps them out of
# a plain `cmake --install`; CPack installs component by component).
foreach(_c IN LISTS _redlock_components)
  if(_c STREQUAL "runtime")
    set(_pkg "${_redlock_runtime_pkg}")
  elseif(_c STREQUAL "dev")
    set(_pkg "libredlock-dev")
  else()
    set(_pkg "redlock-tools")
  endif()
  install(FILES "${REDLOCK_COPYRIGHT_FILE}" DESTINATION "${CMAKE_INSTALL_DATAROOTDIR}/doc/${_pkg}"
          COMPONENT ${_c} EXCLUDE_FROM_ALL)
endforeach()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME redlock-c)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "The redlock-c authors")
set(CPACK_PACKAGE_CONTACT "${REDLOCK_PACKAGE_CONTACT}")
set(CPACK_RESOURCE_FILE_LICENSE "${PROJECT_SOURCE_DIR}/LICENSE")
set(CPACK_STRIP_FILES ON) # the symbol tables (a Release build has no debug information)
set(CPACK_COMPONENTS_ALL ${_redlock_components})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # <package>_<version>-<revision>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Depends on the shared libraries each binary loads (libc6, libhiredis0.14,
# libuv1), from dpkg-shlibdeps; a shlibs file (and the ldconfig trigger) for
# libredlock0, so that packages built against it depend on it in turn.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# libredlock.so.0 is not installed on the machine that builds the packages:
# dpkg-shlibdeps finds it in the build tree for the CLI's Depends
# (redlock-tools names libredlock0 itself, below).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${PROJECT_BINARY_DIR}")

# The hiredis floor.  dpkg-shlibdeps takes libhiredis0.14's own shlibs file,
# which says ">= 0.14.0": that admits builds from before the fix of
# CVE-2021-32765 (an integer overflow in the reply parser, which a malicious
# or compromised master can reach), fixed in Debian by 0.14.1-2.  A local
# shlibs file (dpkg-shlibdeps -L), read before the installed packages' ones,
# raises it; tests/install/deb_test.sh checks the Depends field.  hiredis 1.x
# packages are named libhiredis1.*: the entry does not apply to them.  CPack
# runs dpkg-shlibdeps from SHLIBDEPS_EXECUTABLE, set in the project config
# file that cpack reads before each package.
set(REDLOCK_DEB_HIREDIS_FLOOR "0.14.1-2")
set(REDLOCK_DEB_SHLIBS_LOCAL "${PROJECT_BINARY_DIR}/packaging/shlibs.local")
file(WRITE "${REDLOCK_DEB_SHLIBS_LOCAL}"
     "libhiredis 0.14 libhiredis0.14 (>= ${REDLOCK_DEB_HIREDIS_FLOOR})\n")
find_program(REDLOCK_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(REDLOCK_DPKG_SHLIBDEPS)
  set(CPACK_PROJECT_CONFIG_FILE "${PROJECT_BINARY_DIR}/packaging/cpack-project.cmake")
  file(WRITE "${CPACK_PROJECT_CONFIG_FILE}"
       "# Generated by packaging/cpack.cmake: dpkg-shlibdeps with the local shlibs file.\n"
       "set(SHLIBDEPS_EXECUTABLE \"${REDLOCK_DPKG_SHLIBDEPS};-L${REDLOCK_DEB_SHLIBS_LOCAL}\")\n")
endif()

# Each package's description (CPACK_COMPONENT_<C>_DESCRIPTION): the summary
# line, then the long description (CPack indents it as the control file wants).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "${_redlock_runtime_pkg}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "Redlock distributed locks over N Redis masters (shared library)
redlock-c is a C11 client library implementing Redlock, a distributed lock
held on a majority of N independent Redis masters. It talks to all masters
at once with hiredis' async API on a libuv loop, with blocking and callback
calls, lock extension, waits woken by releases, a restart quarantine and
fencing tokens.

This package contains the shared library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libredlock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The headers include hiredis' and libuv's (redlock_uv.h), the static library
# needs them to link, and redlock.pc and the CMake package find them with
# pkg-config.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "${_redlock_runtime_pkg} (= ${_redlock_deb_version}), libhiredis-dev (>= ${REDLOCK_DEB_HIREDIS_FLOOR}), libuv1-dev, pkg-config")
set(CPACK_DEBIAN_DEV_PACKAGE_SHLIBDEPS OFF) # no ELF programs or shared objects in it
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "Redlock distributed locks over N Redis masters (development files)
redlock-c is a C11 client library implementing Redlock, a distributed lock
held on a majority of N independent Redis masters.

This package contains the headers, the static library, the pkg-config
file (redlock.pc), the CMake package (find_package(redlock)), the API
reference (a man page per function, redlock(3), and HTML), the guides
and the examples' sources.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME redlock-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${_redlock_runtime_pkg} (= ${_redlock_deb_version})")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
    "Redlock distributed locks over N Redis masters (command-line tool)
redlock-c is a C11 client library implementing Redlock, a distributed lock
held on a majority of N independent Redis masters.

This package contains the redlock command: flock(1) across machines. It
runs a command under a lock (redlock run), runs one as the elected leader
(redlock elect), shows a lock's keys on each master (redlock status), and
says whether each master can vote and why not (redlock doctor).")

include(CPack)
