package inputs

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/techlearningpro/engagement/internal/bounded"
	"github.com/techlearningpro/engagement/internal/storage"
)

// A Parquet writer may store a CRC-32 of each page's bytes in the page
// header (parquet-mr and Spark do by default, pyarrow on request). An
// engine that does not verify them reads a flipped bit as another value:
// an event_time a few days off publishes the event on another date, with
// exit 0. Spark verifies them (a forced setting); DuckDB does not, so for
// it the job verifies the pages of the columns it reads, here.
//
// Only a page whose header holds a CRC is checked, and only a definite
// mismatch is an error: a chunk this reader cannot walk is left to the
// engine, which fails on real damage and names the file. The counts are
// checked whatever the writer stored: every page header's values against
// its chunk's, and a flat column chunk's values against its row group's
// rows. A flipped bit in either count makes DuckDB (and pyarrow) read the
// row group short without an error, and no CRC covers them.

// PageChecksumError is a page whose bytes differ from its stored CRC, or
// a checked chunk whose pages hold another number of values than its row
// group states (a damaged page header: the CRC covers the page's data
// only, and DuckDB reads such a row group short, without an error).
type PageChecksumError struct {
	What, File, Column string
	RowGroup           int
	Offset             int64 // the page header's byte offset in the file
	Stored, Computed   uint32
	// Values and Stated are set for a count that differs: the pages'
	// values and the chunk's, or (Rows) the chunk's values and the row
	// group's rows.
	Values, Stated int64
	Rows           bool
}

func (e *PageChecksumError) Error() string {
	if e.Rows {
		return fmt.Sprintf("%s file %s: column %s, row group %d: its chunk states %d values, the row group %d rows: the file's footer is damaged; restore the file from its producer",
			e.What, e.File, e.Column, e.RowGroup, e.Values, e.Stated)
	}
	if e.Stated != e.Values {
		return fmt.Sprintf("%s file %s: column %s, row group %d: its pages hold %d values, the row group states %d: a page header is damaged; restore the file from its producer",
			e.What, e.File, e.Column, e.RowGroup, e.Values, e.Stated)
	}
	return fmt.Sprintf("%s file %s: column %s, row group %d: the page at byte %d fails its checksum (stored %08x, computed %08x): the file is damaged; restore it from its producer",
		e.What, e.File, e.Column, e.RowGroup, e.Offset, e.Stored, e.Computed)
}

// chunk is where one column chunk's pages lie in the file, and how many
// values its metadata states.
type chunk struct {
	column     string // the top column's name
	codec      int64  // ColumnMetaData.codec; -1 when the footer has none
	ptype      int64  // ColumnMetaData.type (the physical type); -1 when the footer has none
	encodings  []int64
	flat       bool  // a top-level column that is not repeated: one value a row
	rows       int64 // the row group's num_rows; -1 when the footer has none
	rowGroup   int
	start, end int64
	values     int64
}

// checksumBlock is how much of a chunk one ranged read fetches once its
// pages show CRCs; headerBytes holds any page header, probeBytes most.
const (
	checksumBlock = 8 << 20
	headerBytes   = 64 << 10
	probeBytes    = 4 << 10 // most headers: the probe of a row group without CRCs
)

// maxPageBytes bounds one page: a larger stated size is damage, left to
// the engine.
const maxPageBytes = 1 << 30

// CheckPageChecksums verifies, for the columns of every file of one input
// (what names it: raw, lessons, enrollments), that each chunk's pages hold
// the values it states and a flat chunk's values equal its row group's
// rows, and with crc the stored page CRCs too (for an engine that does not
// verify them). Pages without a CRC, or all pages without crc, cost one
// small read each, of their header. Files are checked a few at a time
// (object stores answer each read slowly); the first damaged file in the
// listing's order is the one named.
//
// unreadable maps a compression codec (as Parquet names it: BROTLI, LZ4),
// or an encoding and the physical type it encodes ("BYTE_STREAM_SPLIT
// INT64"), that the engine cannot read to why: a chunk of a checked column
// so written is refused naming the file, the column and the codec or
// encoding, where the engine itself failed as "not a readable Parquet
// file" or named no column.
//
// It returns each file's schema key (schemaKey), "" for a file whose
// footer it could not parse whole: an engine that asks its own reader for
// every file's schema may ask once a key.
func (s *Source) CheckPageChecksums(ctx context.Context, what string, files []File, columns []string, crc bool, unreadable map[string]string) ([]string, error) {
	keys := make([]string, len(files))
	err := bounded.First(len(files), checksumReaders, func(i int) (err error) {
		keys[i], err = s.checkFile(ctx, what, files[i], columns, crc, unreadable)
		return err
	})
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// checksumReaders is how many files CheckPageChecksums reads at once. On
// an object store a file without CRCs costs one small read, a request's
// latency; with CRCs, up to checksumBlock of memory a reader, so 8, not
// the footer checks' 16 (benchmark.md, run 39: with 10 ms added to each
// request, 4 readers took 3.0 s for 1,052 files).
const checksumReaders = 8

func (s *Source) checkFile(ctx context.Context, what string, f File, columns []string, crc bool, unreadable map[string]string) (string, error) {
	name := what + " file " + f.Path
	b, key, err := s.object(ctx, f.Path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	buf, err := s.footer(ctx, b, key, f, name)
	if err != nil {
		if !crc && ctx.Err() == nil {
			// Counts only, for an engine that reads the footer itself and
			// names a damaged one in its own words.
			return "", nil
		}
		return "", err
	}
	chunks, err := columnChunks(buf, f.Bytes)
	if err != nil {
		return "", nil // the engine reads the footer too, and names the file
	}
	// No key for a footer this cannot read whole: the engine reads it.
	schema, _ := schemaKey(buf)
	var wanted []chunk
	for _, c := range chunks {
		for _, col := range columns {
			if strings.EqualFold(c.column, col) {
				wanted = append(wanted, c)
				break
			}
		}
	}
	// On a local disk every page header is read (a small read each); on an
	// object store, where each is a request, only the pages of row groups
	// whose CRCs make the pages read anyway.
	headers := !b.Location().IsS3()
	for _, c := range wanted {
		if why, ok := unreadable[codecName(c.codec)]; ok {
			return "", &UnreadableError{What: what, File: f.Path, Column: c.column, How: "compressed with " + codecName(c.codec), Why: why}
		}
		for _, e := range c.encodings {
			enc := encodingName(e) + " " + typeName(c.ptype)
			if why, ok := unreadable[enc]; ok {
				return "", &UnreadableError{What: what, File: f.Path, Column: c.column, How: "written in " + encodingName(e) + " encoding (" + typeName(c.ptype) + " values)", Why: why}
			}
		}
	}
	skip := -1 // a row group found without CRCs, on an object store
	for _, c := range wanted {
		if c.flat && c.rows >= 0 && c.values != c.rows {
			return "", &PageChecksumError{What: what, File: f.Path, Column: c.column, RowGroup: c.rowGroup, Values: c.values, Stated: c.rows, Rows: true}
		}
		if c.rowGroup == skip {
			continue
		}
		r := &pageReader{ctx: ctx, b: b, key: key, end: c.end, block: probeBytes, crc: crc, headers: headers}
		err := r.check(c)
		var bad *PageChecksumError
		switch {
		case err == nil:
		case errors.As(err, &bad):
			bad.What, bad.File = what, f.Path
			return "", bad
		case errors.Is(err, errNoChecksums):
			skip = c.rowGroup
		default:
			return "", fmt.Errorf("%s: %w", name, err)
		}
	}
	return schema, nil
}

// UnreadableError is a column chunk compressed or encoded in a way the
// engine cannot read (How says which, Why the engine's reason).
type UnreadableError struct {
	What, File, Column, How, Why string
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("%s file %s: column %s is %s: %s", e.What, e.File, e.Column, e.How, e.Why)
}

// encodingName is an Encoding as the Parquet format names it.
func encodingName(e int64) string {
	names := []string{"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED", "DELTA_BINARY_PACKED",
		"DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"}
	if e >= 0 && e < int64(len(names)) {
		return names[e]
	}
	return fmt.Sprintf("encoding %d", e)
}

// typeName is a physical Type as the Parquet format names it.
func typeName(t int64) string {
	names := []string{"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"}
	if t >= 0 && t < int64(len(names)) {
		return names[t]
	}
	return fmt.Sprintf("type %d", t)
}

// codecName is a CompressionCodec as the Parquet format names it.
func codecName(c int64) string {
	names := []string{"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"}
	if c >= 0 && c < int64(len(names)) {
		return names[c]
	}
	return fmt.Sprintf("codec %d", c)
}

// errNoChecksums stops the walk of a chunk on an object store whose pages
// are not read for their CRCs.
var errNoChecksums = errors.New("no page checksums")

// pageReader reads a chunk's bytes a block at a time: a header's worth
// until a page shows a CRC (without them, one small read a page, for its
// header's count), then checksumBlock.
type pageReader struct {
	crc      bool // verify stored CRCs; else headers only
	headers  bool // walk every page header, CRC or not (a local disk)
	ctx      context.Context
	b        storage.Bucket
	key      string
	end      int64
	block    int64
	buf      []byte
	bufStart int64
}

// at returns the n bytes at off (fewer at the chunk's end).
func (r *pageReader) at(off, n int64) ([]byte, error) {
	n = min(n, r.end-off)
	if n <= 0 {
		return nil, nil
	}
	if off >= r.bufStart && off+n <= r.bufStart+int64(len(r.buf)) {
		return r.buf[off-r.bufStart : off-r.bufStart+n], nil
	}
	want := min(max(n, r.block), r.end-off)
	buf, err := r.b.ReadRange(r.ctx, r.key, off, want)
	if err != nil {
		return nil, err
	}
	r.buf, r.bufStart = buf, off
	return buf[:min(n, int64(len(buf)))], nil
}

// check walks c's pages and verifies each stored CRC (with r.crc), then
// that the data pages hold the values the chunk states. Without
// r.headers it stops (errNoChecksums) at the first page whose CRC it
// would not verify, a leading dictionary page aside (some writers store
// CRCs for data pages only), unless it already reads the chunk in blocks.
func (r *pageReader) check(c chunk) error {
	pos := c.start
	var values int64
	for pages := 0; pos < c.end; pages++ {
		head, err := r.at(pos, probeBytes)
		if err != nil {
			return err
		}
		h, err := pageHeader(head)
		if err != nil && len(head) == probeBytes {
			// A header with long statistics: read as much as any holds.
			if head, err = r.at(pos, headerBytes); err != nil {
				return err
			}
			h, err = pageHeader(head)
		}
		if err != nil {
			return nil // not walkable: the engine's to judge
		}
		if h.size < 0 || h.size > maxPageBytes || pos+int64(h.headerLen)+int64(h.size) > c.end {
			return nil
		}
		if !r.headers && r.block == probeBytes && !(h.hasCRC && r.crc) && !(pages == 0 && h.dictionary) {
			return errNoChecksums
		}
		if h.hasCRC && r.crc {
			r.block = checksumBlock
			data, err := r.at(pos+int64(h.headerLen), int64(h.size))
			if err != nil {
				return err
			}
			if int64(len(data)) != int64(h.size) {
				return nil
			}
			if sum := crc32.ChecksumIEEE(data); sum != h.crc {
				return &PageChecksumError{Column: c.column, RowGroup: c.rowGroup, Offset: pos, Stored: h.crc, Computed: sum}
			}
		}
		values += h.values
		pos += int64(h.headerLen) + int64(h.size)
	}
	if c.values > 0 && values != c.values {
		return &PageChecksumError{Column: c.column, RowGroup: c.rowGroup, Values: values, Stated: c.values}
	}
	return nil
}

// header is the part of a PageHeader the check needs.
type header struct {
	headerLen  int
	size       int32 // compressed_page_size: the bytes after the header
	crc        uint32
	hasCRC     bool
	dictionary bool
	values     int64 // a data page's num_values (v1 or v2), 0 for others
}

// pageHeader reads a thrift PageHeader: type (1), compressed_page_size
// (3), crc (4) and a data page header's num_values; the rest is skipped.
func pageHeader(b []byte) (header, error) {
	r := &thrift{b: b}
	var h header
	err := r.structFields(0, func(id int16, typ byte) (bool, error) {
		switch {
		case typ == ctI32 && (id == 1 || id == 3 || id == 4):
			v, err := r.varint()
			switch id {
			case 1:
				h.dictionary = v == 2 // PageType DICTIONARY_PAGE
			case 3:
				h.size = int32(v)
			case 4:
				h.crc, h.hasCRC = uint32(int32(v)), true
			}
			return true, err
		case typ == ctStruct && (id == 5 || id == 8):
			// DataPageHeader, DataPageHeaderV2: num_values is field 1.
			return true, r.structFields(1, func(id int16, typ byte) (bool, error) {
				if id != 1 || typ != ctI32 {
					return false, nil
				}
				v, err := r.varint()
				h.values = v
				return true, err
			})
		}
		return false, nil
	})
	h.headerLen = r.pos
	return h, err
}

// columnChunks reads where every column chunk of every row group lies:
// FileMetaData.row_groups (4), each RowGroup's columns (1) and num_rows
// (3), each ColumnChunk's meta_data (3) with path_in_schema (3), codec (4),
// total_compressed_size (7), data_page_offset (9) and
// dictionary_page_offset (11); and from the schema, which top-level
// columns are flat. size is the file's, to bound the offsets.
func columnChunks(footer []byte, size int64) ([]chunk, error) {
	r := &thrift{b: footer}
	var out []chunk
	err := r.structFields(0, func(id int16, typ byte) (bool, error) {
		if id != 4 || typ != ctList {
			return false, nil
		}
		n, _, err := r.listHeader()
		if err != nil {
			return true, err
		}
		for g := range int(n) {
			first, rows := len(out), int64(-1)
			err := r.structFields(1, func(id int16, typ byte) (bool, error) {
				if id == 3 && typ == ctI64 {
					var err error
					rows, err = r.varint()
					return true, err
				}
				if id != 1 || typ != ctList {
					return false, nil
				}
				cols, _, err := r.listHeader()
				if err != nil {
					return true, err
				}
				for range cols {
					c, err := r.columnChunk(g, size)
					if err != nil {
						return true, err
					}
					if c.end > c.start {
						out = append(out, c)
					}
				}
				return true, nil
			})
			if err != nil {
				return true, err
			}
			for i := first; i < len(out); i++ {
				out[i].rows = rows
			}
		}
		return true, nil
	})
	if err != nil {
		return out, err
	}
	var flat map[string]bool
	if elems, err := schemaElements(footer); err == nil {
		flat = flatTopLevel(elems)
	}
	for i := range out {
		out[i].flat = out[i].flat && flat[out[i].column]
	}
	return out, nil
}

// flatTopLevel is which top-level columns of a schema (the footer's
// depth-first element list) are leaves that are not repeated: one value a
// row. A schema this cannot read makes none flat (the count check is then
// left out, not failed).
func flatTopLevel(elems []element) map[string]bool {
	fields, err := flatten(elems, func(string, ...any) error { return errFooter })
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	// flatten gives a field for each element after the root, in order.
	for i, f := range fields {
		if len(f) == 1 {
			out[f[0]] = elems[i+1].children == 0 && !elems[i+1].repeated
		}
	}
	return out
}

// structFields reads one struct's fields, handing each to fn, which says
// whether it read the value; the others are skipped.
func (r *thrift) structFields(depth int, fn func(id int16, typ byte) (bool, error)) error {
	var last int16
	for {
		id, typ, err := r.fieldHeader(last)
		if err != nil || typ == ctStop {
			return err
		}
		last = id
		read, err := fn(id, typ)
		if err != nil {
			return err
		}
		if !read {
			if err := r.skip(typ, depth+1); err != nil {
				return err
			}
		}
	}
}

func (r *thrift) columnChunk(rowGroup int, size int64) (chunk, error) {
	c := chunk{rowGroup: rowGroup, codec: -1, ptype: -1}
	var compressed, data, dict int64
	external := false
	err := r.structFields(3, func(id int16, typ byte) (bool, error) {
		if id == 1 && typ == ctBinary {
			// file_path: the chunk lies in another file.
			external = true
			return false, nil
		}
		if id != 3 || typ != ctStruct {
			return false, nil
		}
		return true, r.structFields(4, func(id int16, typ byte) (bool, error) {
			var err error
			switch {
			case id == 3 && typ == ctList:
				n, _, err := r.listHeader()
				if err != nil {
					return true, err
				}
				for i := range n {
					s, err := r.binary()
					if err != nil {
						return true, err
					}
					if i == 0 {
						c.column = string(s)
					}
				}
				c.flat = n == 1
				return true, nil
			case id == 1 && typ == ctI32:
				c.ptype, err = r.varint()
			case id == 2 && typ == ctList:
				n, _, err := r.listHeader()
				if err != nil {
					return true, err
				}
				for range n {
					e, err := r.varint()
					if err != nil {
						return true, err
					}
					c.encodings = append(c.encodings, e)
				}
				return true, nil
			case id == 4 && typ == ctI32:
				c.codec, err = r.varint()
			case id == 5 && typ == ctI64:
				c.values, err = r.varint()
			case id == 7 && typ == ctI64:
				compressed, err = r.varint()
			case id == 9 && typ == ctI64:
				data, err = r.varint()
			case id == 11 && typ == ctI64:
				dict, err = r.varint()
			default:
				return false, nil
			}
			return true, err
		})
	})
	if err != nil {
		return c, err
	}
	c.start = data
	if dict > 0 && dict < data {
		c.start = dict
	}
	c.end = c.start + compressed
	if external || c.start < 4 || compressed <= 0 || c.end > size {
		c.end = c.start // not walkable: skipped
	}
	return c, nil
}
