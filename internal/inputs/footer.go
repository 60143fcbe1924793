package inputs

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
)

// The Parquet footer is a thrift FileMetaData in the compact protocol, and
// its schema (field 2) is a depth-first list of SchemaElements, each with a
// name (field 4) and, for a group, a num_children (field 5). Only that is
// read; the reader skips everything else and stops after the schema, so it
// never walks the row groups. It is written for hostile bytes: every length
// is checked against what is left and nesting is bounded.

// compact protocol type ids.
const (
	ctStop    = 0
	ctTrue    = 1
	ctFalse   = 2
	ctByte    = 3
	ctI16     = 4
	ctI32     = 5
	ctI64     = 6
	ctDouble  = 7
	ctBinary  = 8
	ctList    = 9
	ctSet     = 10
	ctMap     = 11
	ctStruct  = 12
	ctUUID    = 13
	maxDepth  = 64
	maxFields = 1 << 20 // schema elements in one file, far beyond any real one
)

var errFooter = errors.New("malformed thrift")

type thrift struct {
	b   []byte
	pos int
}

func (r *thrift) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, fmt.Errorf("%w: ends at byte %d", errFooter, r.pos)
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

func (r *thrift) uvarint() (uint64, error) {
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		return 0, fmt.Errorf("%w: bad varint at byte %d", errFooter, r.pos)
	}
	r.pos += n
	return v, nil
}

func (r *thrift) varint() (int64, error) {
	u, err := r.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

func (r *thrift) skipBytes(n uint64) error {
	if n > uint64(len(r.b)-r.pos) {
		return fmt.Errorf("%w: %d bytes wanted at byte %d, %d left", errFooter, n, r.pos, len(r.b)-r.pos)
	}
	r.pos += int(n)
	return nil
}

func (r *thrift) binary() ([]byte, error) {
	n, err := r.uvarint()
	if err != nil {
		return nil, err
	}
	start := r.pos
	if err := r.skipBytes(n); err != nil {
		return nil, err
	}
	return r.b[start:r.pos], nil
}

// fieldHeader reads a struct field header; typ is ctStop at the end.
func (r *thrift) fieldHeader(last int16) (id int16, typ byte, err error) {
	c, err := r.byte()
	if err != nil || c == ctStop {
		return 0, ctStop, err
	}
	typ = c & 0x0f
	if delta := c >> 4; delta != 0 {
		return last + int16(delta), typ, nil
	}
	v, err := r.varint()
	return int16(v), typ, err
}

// listHeader reads a list or set header.
func (r *thrift) listHeader() (size uint64, elem byte, err error) {
	c, err := r.byte()
	if err != nil {
		return 0, 0, err
	}
	size, elem = uint64(c>>4), c&0x0f
	if size == 15 {
		if size, err = r.uvarint(); err != nil {
			return 0, 0, err
		}
	}
	// Every element takes at least a byte, so a size beyond what is left
	// is damage, not a list.
	if size > uint64(len(r.b)-r.pos) {
		return 0, 0, fmt.Errorf("%w: list of %d in %d bytes", errFooter, size, len(r.b)-r.pos)
	}
	return size, elem, nil
}

// skip passes over one value of type typ.
func (r *thrift) skip(typ byte, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nested deeper than %d", errFooter, maxDepth)
	}
	switch typ {
	case ctTrue, ctFalse:
		return nil
	case ctByte:
		_, err := r.byte()
		return err
	case ctI16, ctI32, ctI64:
		_, err := r.uvarint()
		return err
	case ctDouble:
		return r.skipBytes(8)
	case ctUUID:
		return r.skipBytes(16)
	case ctBinary:
		_, err := r.binary()
		return err
	case ctList, ctSet:
		n, elem, err := r.listHeader()
		if err != nil {
			return err
		}
		for range n {
			// A bool inside a list takes a byte of its own.
			if elem == ctTrue || elem == ctFalse {
				if _, err := r.byte(); err != nil {
					return err
				}
				continue
			}
			if err := r.skip(elem, depth+1); err != nil {
				return err
			}
		}
		return nil
	case ctMap:
		n, err := r.uvarint()
		if err != nil || n == 0 {
			return err
		}
		if n > uint64(len(r.b)-r.pos) {
			return fmt.Errorf("%w: map of %d in %d bytes", errFooter, n, len(r.b)-r.pos)
		}
		kv, err := r.byte()
		if err != nil {
			return err
		}
		for range n {
			if err := r.skip(kv>>4, depth+1); err != nil {
				return err
			}
			if err := r.skip(kv&0x0f, depth+1); err != nil {
				return err
			}
		}
		return nil
	case ctStruct:
		var last int16
		for {
			id, t, err := r.fieldHeader(last)
			if err != nil {
				return err
			}
			if t == ctStop {
				return nil
			}
			if err := r.skip(t, depth+1); err != nil {
				return err
			}
			last = id
		}
	}
	return fmt.Errorf("%w: unknown type %d at byte %d", errFooter, typ, r.pos)
}

// numRows reads FileMetaData's num_rows (field 3), skipping every other
// field, the schema and the row groups among them.
func numRows(footer []byte) (int64, error) {
	r := &thrift{b: footer}
	var last int16
	for {
		id, typ, err := r.fieldHeader(last)
		if err != nil {
			return 0, err
		}
		if typ == ctStop {
			return 0, fmt.Errorf("%w: no num_rows", errFooter)
		}
		last = id
		if id == 3 && typ == ctI64 {
			n, err := r.varint()
			if err == nil && n < 0 {
				err = fmt.Errorf("%w: num_rows %d", errFooter, n)
			}
			return n, err
		}
		if err := r.skip(typ, 1); err != nil {
			return 0, err
		}
	}
}

// element is one SchemaElement's name and child count.
type element struct {
	name     string
	children int32
	repeated bool // repetition_type (field 3) REPEATED
	// zoneless: a TIMESTAMP logical type (field 10) with isAdjustedToUTC
	// false. INT96 and the legacy converted types are UTC instants.
	zoneless bool
}

// schemaElements reads FileMetaData up to and including its schema list.
func schemaElements(footer []byte) ([]element, error) {
	r := &thrift{b: footer}
	var last int16
	for {
		id, typ, err := r.fieldHeader(last)
		if err != nil {
			return nil, err
		}
		if typ == ctStop {
			return nil, fmt.Errorf("%w: no schema", errFooter)
		}
		last = id
		if id != 2 || typ != ctList {
			if err := r.skip(typ, 1); err != nil {
				return nil, err
			}
			continue
		}
		n, elem, err := r.listHeader()
		if err != nil {
			return nil, err
		}
		if elem != ctStruct || n > maxFields {
			return nil, fmt.Errorf("%w: schema is not a list of elements", errFooter)
		}
		out := make([]element, 0, n)
		for range n {
			e, err := r.schemaElement()
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
}

func (r *thrift) schemaElement() (element, error) {
	var e element
	err := r.structFields(1, func(id int16, typ byte) (bool, error) {
		switch {
		case id == 4 && typ == ctBinary:
			b, err := r.binary()
			e.name = string(b)
			return true, err
		case typ == ctI32 && (id == 3 || id == 5):
			v, err := r.varint()
			if err != nil {
				return true, err
			}
			switch id {
			case 3:
				e.repeated = v == 2
			case 5:
				if v < 0 || v > maxFields {
					return true, fmt.Errorf("%w: element %q has %d children", errFooter, e.name, v)
				}
				e.children = int32(v)
			}
			return true, nil
		case id == 10 && typ == ctStruct:
			// LogicalType, a union: TIMESTAMP is field 8, whose
			// isAdjustedToUTC (field 1) is a bool held in its type.
			return true, r.structFields(2, func(id int16, typ byte) (bool, error) {
				if id != 8 || typ != ctStruct {
					return false, nil
				}
				return true, r.structFields(3, func(id int16, typ byte) (bool, error) {
					if id != 1 || (typ != ctTrue && typ != ctFalse) {
						return false, nil
					}
					e.zoneless = typ == ctFalse
					return true, nil
				})
			})
		}
		return false, nil
	})
	return e, err
}

// sparkSchemaMetadata is the key-value entry in which Spark keeps the
// schema it wrote a file with; its reader takes the file's types from it
// where it is there, not from the Parquet schema alone.
const sparkSchemaMetadata = "org.apache.spark.sql.parquet.row.metadata"

// schemaKey is a digest of what decides the columns and types a reader
// makes of a file: FileMetaData's schema list (field 2) as written, byte
// for byte, and every value of sparkSchemaMetadata in its key-value
// metadata (field 5). Two files of one key give any reader that converts
// a footer by those alone (Spark does) the same schema, so it need ask
// for one of them; other metadata (pandas' index, a writer's name) may
// differ. Writers that encode one schema in other bytes only give more
// keys. The whole footer is walked, so a file of a key parsed whole.
func schemaKey(footer []byte) (string, error) {
	r := &thrift{b: footer}
	h := sha256.New()
	var schema bool
	err := r.structFields(0, func(id int16, typ byte) (bool, error) {
		switch {
		case id == 2 && typ == ctList:
			start := r.pos
			if err := r.skip(typ, 1); err != nil {
				return true, err
			}
			schema = true
			writeLenPrefixed(h, r.b[start:r.pos])
			return true, nil
		case id == 5 && typ == ctList:
			n, elem, err := r.listHeader()
			if err != nil {
				return true, err
			}
			if elem != ctStruct {
				return true, fmt.Errorf("%w: key_value_metadata is not a list of structs", errFooter)
			}
			for range n {
				var key, value []byte
				err := r.structFields(1, func(id int16, typ byte) (bool, error) {
					if typ != ctBinary || (id != 1 && id != 2) {
						return false, nil
					}
					b, err := r.binary()
					if id == 1 {
						key = b
					} else {
						value = b
					}
					return true, err
				})
				if err != nil {
					return true, err
				}
				if string(key) == sparkSchemaMetadata {
					writeLenPrefixed(h, value)
				}
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return "", err
	}
	if !schema {
		return "", fmt.Errorf("%w: no schema", errFooter)
	}
	return string(h.Sum(nil)), nil
}

// writeLenPrefixed writes b after its length, so that no two sequences of
// parts hash alike by where one ends and the next begins.
func writeLenPrefixed(h hash.Hash, b []byte) {
	h.Write(binary.AppendUvarint(nil, uint64(len(b))))
	h.Write(b)
}
