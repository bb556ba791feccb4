// Package crelease is test support for fuzzing the C Data import, not for
// direct use: release callbacks, in C, for the structs package cdatamodel
// lays out, which an importer such as arrow-go calls. It is an ordinary
// package because _test.go files cannot use cgo (STYLE.md rule 20); only
// tests import it, so it is never linked into the library.
package crelease

/*
#cgo CFLAGS: -Werror -Wall
#include "crelease.h"
*/
import "C"

import "unsafe"

// Schema is the address of a release callback for an ArrowSchema: it marks
// the struct released and counts the call.
func Schema() uintptr { return uintptr(unsafe.Pointer(C.np_crelease_schema)) }

// Array is the address of a release callback for an ArrowArray: it marks
// the struct released and counts the call.
func Array() uintptr { return uintptr(unsafe.Pointer(C.np_crelease_array)) }

// Calls returns how many times each callback has run in this process.
func Calls() (schemas, arrays int64) {
	var s, a C.int64_t
	C.np_crelease_calls(&s, &a)
	return int64(s), int64(a)
}
