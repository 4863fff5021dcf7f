# cmake/RedlockWarnings.cmake: the one place the project's warning flags are
# written.  Every target of the project (library, tools, bench, examples,
# tests) takes its flags from redlock_warnings(); none lists flags itself.
#
#   redlock_warnings(<target>...)
#
# The set: -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
# (designated initializers may leave fields out).  Test code is held to the
# same standard as the code it tests.  -Werror is added when REDLOCK_WERROR
# is on: by default only in a top-level build, so that a newer compiler's new
# warning never breaks a project that embeds us with add_subdirectory; CI
# turns it on explicitly.
function(redlock_warnings)
  set(flags -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
      -Wno-missing-field-initializers)
  if(REDLOCK_WERROR)
    list(APPEND flags -Werror)
  endif()
  foreach(target IN LISTS ARGN)
    target_compile_options(${target} PRIVATE ${flags})
  endforeach()
endfunction()
