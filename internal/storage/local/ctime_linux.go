package local

import (
	"io/fs"
	"syscall"
	"time"
)

// changed is fi's inode change time (ctime): set by every write, rename
// or link, and by nothing a copy can set back (cp -p and rsync -a keep a
// source's modification time).
func changed(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Unix())
	}
	return time.Time{}
}
