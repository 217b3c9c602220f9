package node

// Encoder is a Sink whose target encodes records (a BPF map's bytes, a NATS
// subject): Encoder returns the same Prepare its target would run (no
// I/O: input records into target entries), without
// opening, creating or reading anything. `pipeline test` uses it to show the
// bytes a target would hold. A sink that is not an Encoder keeps records as
// they are (its entries are the records' keys and values).
type Encoder interface {
	Encoder(env Env) (func(Record) (Entry, error), error)
}
