package kobject

import "slices"

// Index maps objects to record keys and keys to the objects that claim them.
// Objects are named by an id (namespace/name for the API server). When
// several objects claim one key, the smallest id wins: its value is the
// key's record and the others are duplicates. Index is not safe for
// concurrent use; its owner locks.
type Index struct {
	keyOf map[string]string   // id -> key
	ids   map[string][]string // key -> sorted ids; ids[key][0] is the winner
}

// Change says that a key's record must be re-emitted: Winner is the id
// whose object now provides the key's value, "" when the key is gone.
// WinnerChanged is false when the same object still provides the key (its
// content may have changed; the caller compares).
type Change struct {
	Key           string
	Winner        string
	WinnerChanged bool
}

// NewIndex returns an empty Index.
func NewIndex() *Index {
	return &Index{keyOf: map[string]string{}, ids: map[string][]string{}}
}

// Put records that object id has key. It returns the keys whose record the
// caller must re-emit: the old key when id moved away from it and was its
// winner, and the new key when id is (now) its winner.
func (ix *Index) Put(id, key string) []Change {
	var out []Change
	if old, ok := ix.keyOf[id]; ok {
		if old == key {
			if ix.ids[key][0] == id {
				return []Change{{Key: key, Winner: id}}
			}
			return nil
		}
		out = ix.remove(id, old)
	}
	ix.keyOf[id] = key
	ids := ix.ids[key]
	prev := ""
	if len(ids) > 0 {
		prev = ids[0]
	}
	i, _ := slices.BinarySearch(ids, id)
	ix.ids[key] = slices.Insert(ids, i, id)
	if i == 0 {
		out = append(out, Change{Key: key, Winner: id, WinnerChanged: prev != id})
	}
	return out
}

// Remove forgets object id. It returns the change of its key when id was
// the key's winner.
func (ix *Index) Remove(id string) []Change {
	old, ok := ix.keyOf[id]
	if !ok {
		return nil
	}
	return ix.remove(id, old)
}

func (ix *Index) remove(id, key string) []Change {
	delete(ix.keyOf, id)
	ids := ix.ids[key]
	i, found := slices.BinarySearch(ids, id)
	if !found {
		return nil
	}
	ids = slices.Delete(ids, i, i+1)
	if len(ids) == 0 {
		delete(ix.ids, key)
		return []Change{{Key: key, WinnerChanged: true}}
	}
	ix.ids[key] = ids
	if i == 0 {
		return []Change{{Key: key, Winner: ids[0], WinnerChanged: true}}
	}
	return nil
}

// Winner returns the id that provides key's record.
func (ix *Index) Winner(key string) (string, bool) {
	ids := ix.ids[key]
	if len(ids) == 0 {
		return "", false
	}
	return ids[0], true
}

// Len returns the number of indexed objects (duplicates included).
func (ix *Index) Len() int { return len(ix.keyOf) }
