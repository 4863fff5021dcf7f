//go:build !redlock_static

package redlocktest

// As the redlock package links libredlock (../link_shared.go): pkg-config.

// #cgo pkg-config: redlock
import "C"
