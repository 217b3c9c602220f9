package schema

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/zclconf/go-cty/cty"
)

// Numbers are bounded where they are made (a literal, a function's
// result, a local, a record's value): cty keeps them as big.Float, and a
// number such as 1e9999999 or a literal of five million digits is cheap
// to write but takes minutes and gigabytes to print or compare. A number
// is refused when it is infinite (1/0), when its magnitude lies outside
// what a float64 holds (about 1e-308 to 1e308), or when a literal has
// more than MaxNumberDigits characters.
const (
	MaxNumberDigits = 100
	maxNumberExp    = 1024 // binary exponent, as a float64's
)

// CheckNumber says why n is not a number a configuration or a record may
// hold, or returns nil.
func CheckNumber(n *big.Float) error {
	if n.IsInf() {
		return fmt.Errorf("the number is infinite (a division by zero?); only finite numbers can be written")
	}
	if n.Sign() == 0 {
		return nil
	}
	if e := n.MantExp(nil); e > maxNumberExp || e < -maxNumberExp {
		return fmt.Errorf("the number's magnitude (about 2^%d) is out of range; numbers must lie within about 1e-308 and 1e308", e)
	}
	return nil
}

// CheckNumberLiteral checks a number as written: its length, then its
// value.
func CheckNumberLiteral(s string) error {
	if len(s) > MaxNumberDigits {
		return fmt.Errorf("a number literal of %d characters is longer than the limit of %d", len(s), MaxNumberDigits)
	}
	n, _, err := big.ParseFloat(s, 10, 64, big.ToNearestEven)
	if err != nil {
		return nil // the parser reports what is not a number
	}
	return CheckNumber(n)
}

// CheckNumbers walks v and says why the first number in it that
// CheckNumber refuses is refused, or returns nil.
func CheckNumbers(v cty.Value) error {
	var err error
	walkNumbers(v, func(n cty.Value) bool {
		err = CheckNumber(n.AsBigFloat())
		return err == nil
	})
	return err
}

// walkNumbers calls f on every known number in v until it returns false.
func walkNumbers(v cty.Value, f func(cty.Value) bool) bool {
	if !v.IsKnown() || v.IsNull() {
		return true
	}
	v, _ = v.Unmark()
	ty := v.Type()
	switch {
	case ty == cty.Number:
		return f(v)
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType():
		for it := v.ElementIterator(); it.Next(); {
			if _, e := it.Element(); !walkNumbers(e, f) {
				return false
			}
		}
	}
	return true
}

// ErrNoKey is RecordKey's answer for a null or empty key: the element
// gives no record, which is not an error.
var ErrNoKey = errors.New("no key")

// RecordKey converts the value of a transform's `key` expression to a
// record key: strings as they are, numbers as decimal text. Null and ""
// are ErrNoKey.
func RecordKey(v cty.Value) (string, error) {
	if v.IsMarked() {
		// A key is a record's identity, shown in every view.
		return "", errors.New("key is computed from a sensitive value; keys are shown in logs and status, so use the sensitive value in the record's value")
	}
	if v.IsNull() {
		return "", ErrNoKey
	}
	if !v.IsKnown() {
		return "", errors.New("key is not known")
	}
	switch v.Type() {
	case cty.String:
	case cty.Number:
		return NumberKey(v.AsBigFloat())
	default:
		return "", fmt.Errorf("key must be a string or a number, not %s", v.Type().FriendlyName())
	}
	if v.AsString() == "" {
		return "", ErrNoKey
	}
	return v.AsString(), nil
}

// NumberKey is a number as a record key: its decimal text, with -0 as 0
// (one number, one key, whichever way the input spells it). A number
// CheckNumber refuses has no key: the text of 1e7050281 is seven million
// digits.
func NumberKey(f *big.Float) (string, error) {
	if err := CheckNumber(f); err != nil {
		return "", fmt.Errorf("key: %w", err)
	}
	if f.Sign() == 0 {
		return "0", nil
	}
	return f.Text('f', -1), nil
}
