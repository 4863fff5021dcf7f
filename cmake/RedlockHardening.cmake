# cmake/RedlockHardening.cmake: the exploit-mitigation flags of what is
# shipped (the library and the `redlock` CLI), in one place.
#
#   REDLOCK_HARDEN  AUTO (default): on for an optimized build (Release,
#                   RelWithDebInfo, MinSizeRel) without sanitizers; ON; OFF
#   redlock_harden(COMPILE <target>... LINK <target>...)
#
# The flags, as Debian's dpkg-buildflags gives them to its packages:
#   -fstack-protector-strong            a canary in every function with a
#                                       local array or an address-taken local
#   -D_FORTIFY_SOURCE=2                 glibc's checked memcpy/snprintf/...
#                                       (*_chk) where the object size is known
#   -Wl,-z,relro -Wl,-z,now             the GOT read-only after start-up, all
#                                       symbols bound at load time (BIND_NOW)
# _FORTIFY_SOURCE needs the optimizer (glibc warns, and -Werror fails, at
# -O0) and hides calls from ASan's interceptors, so it is left out of Debug
# configurations and of sanitizer builds, even with ON; the other flags stay.
# It is a compile option, not a definition: tests/fuzz copies the library's
# definitions into its libFuzzer+ASan copy, which must not get it.
# tests/install/hardening_check.sh checks the packaged binaries
# (scripts/package.sh --check).
set(REDLOCK_HARDEN AUTO CACHE STRING
    "Stack protector, _FORTIFY_SOURCE=2, RELRO and BIND_NOW: AUTO (optimized builds), ON or OFF")
set_property(CACHE REDLOCK_HARDEN PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${REDLOCK_HARDEN}" _redlock_harden_mode)
if(NOT _redlock_harden_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "REDLOCK_HARDEN must be AUTO, ON or OFF (got '${REDLOCK_HARDEN}')")
endif()

set(_redlock_sanitized OFF)
if(REDLOCK_SANITIZE OR REDLOCK_FUZZ)
  set(_redlock_sanitized ON)
endif()
set(_redlock_optimized_configs Release RelWithDebInfo MinSizeRel)

set(REDLOCK_HARDENING OFF)
if(_redlock_harden_mode STREQUAL "ON")
  set(REDLOCK_HARDENING ON)
elseif(_redlock_harden_mode STREQUAL "AUTO" AND NOT _redlock_sanitized)
  if(CMAKE_CONFIGURATION_TYPES OR CMAKE_BUILD_TYPE IN_LIST _redlock_optimized_configs)
    set(REDLOCK_HARDENING ON) # multi-config: per configuration, below
  endif()
endif()
if(REDLOCK_HARDENING AND NOT CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  if(_redlock_harden_mode STREQUAL "ON")
    message(FATAL_ERROR "REDLOCK_HARDEN=ON needs GCC or Clang (got ${CMAKE_C_COMPILER_ID})")
  endif()
  set(REDLOCK_HARDENING OFF)
endif()

set(REDLOCK_HARDEN_COMPILE)
set(REDLOCK_HARDEN_LINK)
# REDLOCK_HARDENING_FULL: this (single-configuration) build gets every flag,
# FORTIFY included; tests/install checks its binaries then.
set(REDLOCK_HARDENING_FULL OFF)
if(REDLOCK_HARDENING AND NOT _redlock_sanitized AND NOT APPLE AND NOT WIN32
   AND CMAKE_BUILD_TYPE IN_LIST _redlock_optimized_configs)
  set(REDLOCK_HARDENING_FULL ON)
endif()
if(REDLOCK_HARDENING)
  list(APPEND REDLOCK_HARDEN_COMPILE -fstack-protector-strong)
  if(NOT _redlock_sanitized)
    # -U first: a toolchain that already defines it (Ubuntu's GCC) would
    # otherwise warn about the redefinition.
    set(_optimized "$<CONFIG:Release,RelWithDebInfo,MinSizeRel>")
    list(APPEND REDLOCK_HARDEN_COMPILE "$<${_optimized}:-U_FORTIFY_SOURCE>"
         "$<${_optimized}:-D_FORTIFY_SOURCE=2>")
  endif()
  if(NOT APPLE AND NOT WIN32)
    list(APPEND REDLOCK_HARDEN_LINK "LINKER:-z,relro" "LINKER:-z,now")
  endif()
  set(_what "-fstack-protector-strong")
  if(NOT _redlock_sanitized)
    string(APPEND _what " -D_FORTIFY_SOURCE=2 (optimized configurations)")
  endif()
  if(REDLOCK_HARDEN_LINK)
    string(APPEND _what " -Wl,-z,relro,-z,now")
  endif()
  message(STATUS "redlock: hardening on (REDLOCK_HARDEN=${REDLOCK_HARDEN}): ${_what}")
else()
  message(STATUS "redlock: hardening off (REDLOCK_HARDEN=${REDLOCK_HARDEN}, "
                 "build type '${CMAKE_BUILD_TYPE}', sanitizers ${_redlock_sanitized})")
endif()

# redlock_harden(COMPILE <target>... LINK <target>...): the compile flags on
# the COMPILE targets (the objects), the link flags on the LINK targets (the
# shared library, the executables).
function(redlock_harden)
  cmake_parse_arguments(arg "" "" "COMPILE;LINK" ${ARGN})
  if(NOT REDLOCK_HARDENING)
    return()
  endif()
  foreach(target IN LISTS arg_COMPILE)
    target_compile_options(${target} PRIVATE ${REDLOCK_HARDEN_COMPILE})
  endforeach()
  foreach(target IN LISTS arg_LINK)
    target_link_options(${target} PRIVATE ${REDLOCK_HARDEN_LINK})
  endforeach()
endfunction()
