package cdatamodel

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// Capture reads the live C Data batch at schemaAddr and arrayAddr (a
// producer's export in this process, whose memory is valid) into a Batch
// that Materialize lays out again: how seed corpora are made from real
// producers. bufLen gives the bytes of buffer i (of n) at addr, which the C
// structs do not carry (the producer's own buffer lengths); an error when
// it does not know one. Every pointer of the result is PtrValid.
func Capture(schemaAddr, arrayAddr uintptr, bufLen BufLen) (Batch, error) {
	sc, err := captureSchema(schemaAddr, 0)
	if err != nil {
		return Batch{}, err
	}
	arr, err := captureArray(arrayAddr, bufLen, 0)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Schema: sc, Array: arr}, nil
}

// at is the memory at addr, a live producer's (the reinterpretation keeps
// vet's uintptr rule quiet: the memory is C's, never moved by Go).
func at(addr uintptr, n int) []byte {
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), n)
}

func words(addr uintptr, n int) []uint64 {
	out := make([]uint64, n)
	b := at(addr, 8*n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}

func cstr(addr uintptr) []byte {
	var out []byte
	for i := uintptr(0); at(addr+i, 1)[0] != 0; i++ {
		out = append(out, at(addr+i, 1)[0])
	}
	return out
}

func captureSchema(addr uintptr, depth int) (*Schema, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("cdatamodel: capture: deeper than %d", maxDepth)
	}
	w := words(addr, 10)
	s := &Schema{Format: String{Bytes: cstr(uintptr(w[0]))}, Flags: int64(w[3])}
	if w[1] != 0 {
		s.Name = &String{Bytes: cstr(uintptr(w[1]))}
	}
	if w[2] != 0 {
		p := uintptr(w[2])
		n := int(int32(binary.LittleEndian.Uint32(at(p, 4))))
		size := 4
		for range 2 * n {
			size += 4 + int(int32(binary.LittleEndian.Uint32(at(p+uintptr(size), 4))))
		}
		s.Metadata = append([]byte(nil), at(p, size)...)
	}
	if n := int(w[4]); n > 0 {
		for _, k := range words(uintptr(w[5]), n) {
			c, err := captureSchema(uintptr(k), depth+1)
			if err != nil {
				return nil, err
			}
			s.Children.Nodes = append(s.Children.Nodes, c)
		}
	}
	if w[6] != 0 {
		d, err := captureSchema(uintptr(w[6]), depth+1)
		if err != nil {
			return nil, err
		}
		s.Dictionary = d
	}
	return s, nil
}

// BufLen returns the length in bytes of buffer i of n at addr.
type BufLen func(addr uintptr, i, n int) (int, bool)

func captureArray(addr uintptr, bufLen BufLen, depth int) (*Array, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("cdatamodel: capture: deeper than %d", maxDepth)
	}
	w := words(addr, 10)
	a := &Array{Length: int64(w[0]), NullCount: int64(w[1]), Offset: int64(w[2])}
	if n := int(w[3]); n > 0 {
		for i, p := range words(uintptr(w[5]), n) {
			if p == 0 {
				a.Buffers = append(a.Buffers, Buffer{Mode: PtrNull})
				continue
			}
			l, ok := bufLen(uintptr(p), i, n)
			if !ok {
				return nil, fmt.Errorf("cdatamodel: capture: buffer %d at 0x%x of unknown length", i, p)
			}
			a.Buffers = append(a.Buffers, Buffer{Data: append([]byte{}, at(uintptr(p), l)...)})
		}
	}
	if n := int(w[4]); n > 0 {
		for _, k := range words(uintptr(w[6]), n) {
			c, err := captureArray(uintptr(k), bufLen, depth+1)
			if err != nil {
				return nil, err
			}
			a.Children.Nodes = append(a.Children.Nodes, c)
		}
	}
	if w[7] != 0 {
		d, err := captureArray(uintptr(w[7]), bufLen, depth+1)
		if err != nil {
			return nil, err
		}
		a.Dictionary = d
	}
	return a, nil
}
