package schema

import (
	"bytes"
	"sync"

	"github.com/hashicorp/hcl/v2"
)

// Parses keeps the parses of configuration files for a process that loads
// the same files again and again: the language server checks a whole
// directory after each edit of one of its files, and the others need not
// be parsed again. A file is found by its name and its content (the bytes
// are compared); only parses without diagnostics are kept, since their
// readers change diagnostics in place. It holds the files of at most
// limit bytes in all, dropping the least recently used first. The parsed
// files are shared by every load that finds them: nothing changes a parsed
// file. Safe for concurrent use; the zero value is not, use NewParses.
type Parses struct {
	mu    sync.Mutex
	limit int
	size  int
	clock uint64
	files map[string]*parseEntry
}

type parseEntry struct {
	file *hcl.File
	used uint64
}

// NewParses returns an empty cache holding at most limit bytes of files.
func NewParses(limit int) *Parses {
	return &Parses{limit: limit, files: map[string]*parseEntry{}}
}

// get returns the kept parse of name when its content is src.
func (p *Parses) get(name string, src []byte) *hcl.File {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.files[name]
	if e == nil || !bytes.Equal(e.file.Bytes, src) {
		return nil
	}
	p.clock++
	e.used = p.clock
	return e.file
}

// put keeps f as the parse of name, in place of any other of its content.
func (p *Parses) put(name string, f *hcl.File) {
	if p == nil || len(f.Bytes) > p.limit {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.files[name]; old != nil {
		p.size -= len(old.file.Bytes)
	}
	p.clock++
	p.files[name] = &parseEntry{file: f, used: p.clock}
	p.size += len(f.Bytes)
	for p.size > p.limit {
		oldest := ""
		for n, e := range p.files {
			if oldest == "" || e.used < p.files[oldest].used {
				oldest = n
			}
		}
		p.size -= len(p.files[oldest].file.Bytes)
		delete(p.files, oldest)
	}
}
