/* cli_file.h: a file replaced whole (run's --metrics-file).  The new
 * content goes to a temporary file that mkostemp creates in the target's
 * directory (O_EXCL: a name planted in advance, a symlink included, is
 * never opened), is synced, and is renamed over the target: a reader never
 * sees half a file, and a symlink at the target is replaced, not
 * followed. */
#ifndef REDLOCK_CLI_FILE_H
#define REDLOCK_CLI_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* len bytes of data as path's content, with permissions mode.  0, or -1
 * with errno set (nothing left behind). */
int cli_file_replace(const char *path, const char *data, size_t len, mode_t mode);

#endif
