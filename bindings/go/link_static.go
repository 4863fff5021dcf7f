//go:build redlock_static

package redlock

// -tags redlock_static: libredlock.a is linked into the program, which then
// needs no libredlock.so.0 at run time (hiredis and libuv stay shared, as
// pkg-config --static names them: its Requires.private bring -lhiredis, which
// the archive needs).
//
// pkg-config's -lredlock would pick libredlock.so when both are installed
// side by side (ld prefers the shared one), so the archive is named first by
// its file name; cgo puts these LDFLAGS before pkg-config's, and --as-needed
// then drops the shared library, whose symbols nothing needs any more.

// #cgo pkg-config: --static redlock
// #cgo LDFLAGS: -l:libredlock.a -Wl,--as-needed
import "C"
