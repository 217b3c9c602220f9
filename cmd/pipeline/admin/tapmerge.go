package admin

import (
	"context"
	"reflect"

	"github.com/pipeline/pipeline/engine"
)

// mergeTaps delivers the events of every tap on one channel until ctx ends.
// One goroutine selects over all taps; it returns when ctx ends.
func mergeTaps(ctx context.Context, taps []*engine.Tap) <-chan engine.TapEvent {
	out := make(chan engine.TapEvent)
	cases := make([]reflect.SelectCase, 0, len(taps)+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, t := range taps {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)})
	}
	go func() {
		for {
			i, v, _ := reflect.Select(cases)
			if i == 0 {
				return
			}
			select {
			case out <- v.Interface().(engine.TapEvent):
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
