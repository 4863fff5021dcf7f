//go:build redlock_static

package redlocktest

// As the redlock package links libredlock.a (../link_static.go).

// #cgo pkg-config: --static redlock
// #cgo LDFLAGS: -l:libredlock.a -Wl,--as-needed
import "C"
