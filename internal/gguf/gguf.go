// Package gguf writes (and reads back the header of) GGUF v3 files, the
// model format of llama.cpp and Ollama, and generates a tiny random-weight
// llama-architecture test model (see Tiny) that llama-server and Ollama
// load with no download.
//
// Layout of a GGUF v3 file (little-endian):
//
//	magic "GGUF" | version u32 = 3 | tensor count u64 | metadata count u64
//	metadata: key (string) | value type u32 | value
//	tensor infos: name (string) | n_dims u32 | dims u64... | ggml type u32 | offset u64
//	padding to general.alignment (32)
//	tensor data, each tensor at its offset (a multiple of the alignment)
//
// A string is a u64 byte length and the bytes (no terminator); an array is
// an element type u32, a u64 count and the elements. dims[0] is the
// contiguous (fastest-varying) dimension, as ggml's ne[0].
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// Magic and Version of the files this package writes.
const (
	Magic     = "GGUF"
	Version   = 3
	Alignment = 32
)

// Metadata value types.
const (
	TypeUint8   uint32 = 0
	TypeInt8    uint32 = 1
	TypeUint16  uint32 = 2
	TypeInt16   uint32 = 3
	TypeUint32  uint32 = 4
	TypeInt32   uint32 = 5
	TypeFloat32 uint32 = 6
	TypeBool    uint32 = 7
	TypeString  uint32 = 8
	TypeArray   uint32 = 9
	TypeUint64  uint32 = 10
	TypeInt64   uint32 = 11
	TypeFloat64 uint32 = 12
)

// Tensor data types (ggml_type) this package writes.
const (
	GGMLTypeF32 uint32 = 0
	GGMLTypeF16 uint32 = 1
)

// KV is one metadata entry. Value is one of uint8, int8, uint16, int16,
// uint32, int32, float32, bool, string, uint64, int64, float64, or a slice
// of one of them ([]string, []float32, []int32, ...).
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor to write: F32 data written as F32 or F16.
type Tensor struct {
	Name string
	// Dims are ggml's ne: Dims[0] is the contiguous dimension.
	Dims []uint64
	// Type is GGMLTypeF32 or GGMLTypeF16.
	Type uint32
	Data []float32
}

func (t *Tensor) elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

func (t *Tensor) size() uint64 {
	if t.Type == GGMLTypeF16 {
		return t.elements() * 2
	}
	return t.elements() * 4
}

// Write writes a GGUF v3 file with the metadata kvs (in order) and the
// tensors (in order, each aligned to Alignment).
func Write(w io.Writer, kvs []KV, tensors []Tensor) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	e := &enc{w: bw}
	e.raw([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		e.value(kv.Value)
	}
	var off uint64
	for i := range tensors {
		t := &tensors[i]
		if t.Type != GGMLTypeF32 && t.Type != GGMLTypeF16 {
			return fmt.Errorf("gguf: tensor %s: unsupported type %d", t.Name, t.Type)
		}
		if uint64(len(t.Data)) != t.elements() {
			return fmt.Errorf("gguf: tensor %s: %d values for dims %v", t.Name, len(t.Data), t.Dims)
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(t.Type)
		e.u64(off)
		off = align(off + t.size())
	}
	e.pad()
	start := e.n
	for i := range tensors {
		t := &tensors[i]
		if t.Type == GGMLTypeF16 {
			for _, v := range t.Data {
				e.u16(Float16(v))
			}
		} else {
			for _, v := range t.Data {
				e.u32(math.Float32bits(v))
			}
		}
		e.pad()
	}
	if e.err != nil {
		return fmt.Errorf("gguf: write: %w", e.err)
	}
	if e.n-start != off {
		return fmt.Errorf("gguf: internal: data section %d bytes, want %d", e.n-start, off)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

func align(n uint64) uint64 { return (n + Alignment - 1) / Alignment * Alignment }

type enc struct {
	w   *bufio.Writer
	n   uint64
	err error
	b   [8]byte
}

func (e *enc) raw(b []byte) {
	if e.err != nil {
		return
	}
	var n int
	n, e.err = e.w.Write(b)
	e.n += uint64(n)
}

func (e *enc) u8(v uint8) { e.raw([]byte{v}) }
func (e *enc) u16(v uint16) {
	binary.LittleEndian.PutUint16(e.b[:2], v)
	e.raw(e.b[:2])
}
func (e *enc) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.b[:4], v)
	e.raw(e.b[:4])
}
func (e *enc) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.b[:8], v)
	e.raw(e.b[:8])
}
func (e *enc) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}
func (e *enc) pad() {
	for e.n%Alignment != 0 {
		e.u8(0)
	}
}

// value writes a type tag and a value.
func (e *enc) value(v any) {
	switch x := v.(type) {
	case []string:
		e.u32(TypeArray)
		e.u32(TypeString)
		e.u64(uint64(len(x)))
		for _, s := range x {
			e.str(s)
		}
	case []float32:
		e.u32(TypeArray)
		e.u32(TypeFloat32)
		e.u64(uint64(len(x)))
		for _, f := range x {
			e.u32(math.Float32bits(f))
		}
	case []int32:
		e.u32(TypeArray)
		e.u32(TypeInt32)
		e.u64(uint64(len(x)))
		for _, i := range x {
			e.u32(uint32(i))
		}
	case []uint32:
		e.u32(TypeArray)
		e.u32(TypeUint32)
		e.u64(uint64(len(x)))
		for _, i := range x {
			e.u32(i)
		}
	default:
		t, ok := scalarType(v)
		if !ok {
			if e.err == nil {
				e.err = fmt.Errorf("unsupported metadata value %T", v)
			}
			return
		}
		e.u32(t)
		e.scalar(v)
	}
}

func scalarType(v any) (uint32, bool) {
	switch v.(type) {
	case uint8:
		return TypeUint8, true
	case int8:
		return TypeInt8, true
	case uint16:
		return TypeUint16, true
	case int16:
		return TypeInt16, true
	case uint32:
		return TypeUint32, true
	case int32:
		return TypeInt32, true
	case float32:
		return TypeFloat32, true
	case bool:
		return TypeBool, true
	case string:
		return TypeString, true
	case uint64:
		return TypeUint64, true
	case int64:
		return TypeInt64, true
	case float64:
		return TypeFloat64, true
	}
	return 0, false
}

func (e *enc) scalar(v any) {
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	}
}

// Float16 converts f to IEEE 754 half precision (round to nearest even;
// overflow to infinity, underflow through subnormals to zero).
func Float16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff == 0:
		return sign
	case b>>23&0xff == 0xff: // inf, nan
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		rem := mant & (1<<shift - 1)
		if rem > half || (rem == half && r&1 == 1) {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && r&1 == 1) {
		r++ // may carry into the exponent, up to infinity: correct
	}
	return sign | uint16(r)
}

// Header is what ReadHeader decodes: the metadata and the tensor infos.
type Header struct {
	Version  uint32
	Metadata map[string]any
	// Keys in file order.
	Keys    []string
	Tensors []TensorInfo
	// DataOffset is where the tensor data section starts in the file.
	DataOffset uint64
}

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   uint32
	Offset uint64
}

// ReadHeader decodes a GGUF file's metadata and tensor infos (v2 and v3).
// Arrays decode to []any.
func ReadHeader(r io.Reader) (*Header, error) {
	d := &dec{r: bufio.NewReader(r)}
	magic := d.bytes(4)
	if d.err == nil && string(magic) != Magic {
		return nil, fmt.Errorf("gguf: bad magic %q", magic)
	}
	h := &Header{Version: d.u32(), Metadata: map[string]any{}}
	if d.err == nil && (h.Version < 2 || h.Version > 3) {
		return nil, fmt.Errorf("gguf: unsupported version %d", h.Version)
	}
	nt, nkv := d.u64(), d.u64()
	if nt > 1<<20 || nkv > 1<<20 {
		return nil, errors.New("gguf: implausible counts")
	}
	for i := uint64(0); i < nkv && d.err == nil; i++ {
		k := d.str()
		h.Keys = append(h.Keys, k)
		h.Metadata[k] = d.value(d.u32())
	}
	for i := uint64(0); i < nt && d.err == nil; i++ {
		ti := TensorInfo{Name: d.str()}
		nd := d.u32()
		if nd > 4 {
			return nil, fmt.Errorf("gguf: tensor %s: %d dims", ti.Name, nd)
		}
		for j := uint32(0); j < nd; j++ {
			ti.Dims = append(ti.Dims, d.u64())
		}
		ti.Type, ti.Offset = d.u32(), d.u64()
		h.Tensors = append(h.Tensors, ti)
	}
	if d.err != nil {
		return nil, fmt.Errorf("gguf: read header: %w", d.err)
	}
	a := uint64(Alignment)
	if v, ok := h.Metadata["general.alignment"].(uint32); ok && v > 0 {
		a = uint64(v)
	}
	h.DataOffset = (d.n + a - 1) / a * a
	sort.SliceStable(h.Tensors, func(i, j int) bool { return h.Tensors[i].Offset < h.Tensors[j].Offset })
	return h, nil
}

type dec struct {
	r   *bufio.Reader
	n   uint64
	err error
}

func (d *dec) bytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > 1<<26 {
		d.err = fmt.Errorf("implausible length %d", n)
		return nil
	}
	b := make([]byte, n)
	_, d.err = io.ReadFull(d.r, b)
	d.n += n
	return b
}

func (d *dec) u8() uint8 {
	b := d.bytes(1)
	if b == nil {
		return 0
	}
	return b[0]
}
func (d *dec) u16() uint16 {
	b := d.bytes(2)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(b)
}
func (d *dec) u32() uint32 {
	b := d.bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}
func (d *dec) u64() uint64 {
	b := d.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}
func (d *dec) str() string { return string(d.bytes(d.u64())) }

func (d *dec) value(t uint32) any {
	switch t {
	case TypeUint8:
		return d.u8()
	case TypeInt8:
		return int8(d.u8())
	case TypeUint16:
		return d.u16()
	case TypeInt16:
		return int16(d.u16())
	case TypeUint32:
		return d.u32()
	case TypeInt32:
		return int32(d.u32())
	case TypeFloat32:
		return math.Float32frombits(d.u32())
	case TypeBool:
		return d.u8() != 0
	case TypeString:
		return d.str()
	case TypeUint64:
		return d.u64()
	case TypeInt64:
		return int64(d.u64())
	case TypeFloat64:
		return math.Float64frombits(d.u64())
	case TypeArray:
		et, n := d.u32(), d.u64()
		if n > 1<<24 {
			d.err = fmt.Errorf("implausible array length %d", n)
			return nil
		}
		out := make([]any, 0, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			out = append(out, d.value(et))
		}
		return out
	}
	if d.err == nil {
		d.err = fmt.Errorf("unknown metadata type %d", t)
	}
	return nil
}
