//go:build !redlock_static

package redlock

// How the package finds libredlock: pkg-config, from redlock.pc (installed
// by `cmake --install`) or, with PKG_CONFIG_PATH naming a build directory,
// redlock-uninstalled.pc there (which also sets an rpath to that directory).
// This file links the shared library; build with -tags redlock_static for
// the static one (link_static.go).

// #cgo pkg-config: redlock
import "C"
