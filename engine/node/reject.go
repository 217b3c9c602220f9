package node

import "errors"

// Rejected marks err as the target's permanent answer to one write: the
// same write gets the same answer (Kubernetes' 400, 413, 422; an admission
// denial), so retrying it on a backoff only repeats the refusal. The sink
// loop records the entry as failed and rejected and writes it again only
// when the wanted value changes, or at the next periodic full reconcile
// (resync). Set it on Entry.Err; nil stays nil.
func Rejected(err error) error {
	if err == nil {
		return nil
	}
	return &rejectedError{err}
}

// IsRejected reports whether err, or an error it wraps, is marked by
// Rejected.
func IsRejected(err error) bool {
	var r *rejectedError
	return errors.As(err, &r)
}

type rejectedError struct{ err error }

func (e *rejectedError) Error() string { return e.err.Error() }
func (e *rejectedError) Unwrap() error { return e.err }
