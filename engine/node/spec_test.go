package node

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

type testSource struct{}

func (testSource) Run(context.Context, Env, Output) error { return nil }

type testTransform struct{}

func (testTransform) Run(context.Context, Env, Input, Output) error { return nil }

func newTestSource(Build) (Source, hcl.Diagnostics)       { return testSource{}, nil }
func newTestTransform(Build) (Transform, hcl.Diagnostics) { return testTransform{}, nil }
func newTestSink(Build) (Sink, hcl.Diagnostics)           { return testSink{}, nil }

type testSink struct{}

func (testSink) Open(context.Context, Env, Mode) (Target, error) { return nil, nil }

// TestRegistryConstructors: a spec sets exactly the constructor of its
// kind; anything else is a programmer error NewRegistry panics on.
func TestRegistryConstructors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spec  Spec
		panic string // "" when the spec is fine
	}{
		{"source", Spec{Kind: KindSource, NewSource: newTestSource}, ""},
		{"transform", Spec{Kind: KindTransform, NewTransform: newTestTransform}, ""},
		{"sink", Spec{Kind: KindSink, NewSink: newTestSink}, ""},
		{"none", Spec{Kind: KindSink}, "no constructor: set NewSink"},
		{"wrong", Spec{Kind: KindSource, NewSink: newTestSink}, "sets NewSink: set only NewSource"},
		{"several", Spec{Kind: KindTransform, NewSource: newTestSource, NewTransform: newTestTransform},
			"sets NewSource and NewTransform: set only NewTransform"},
		{"unknown kind", Spec{Kind: "widget", NewSink: newTestSink}, `unknown kind "widget"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Type, tc.spec.Summary = "x", "test"
			if tc.spec.Kind != KindSink {
				tc.spec.Output = Records
			}
			got := catch(func() { NewRegistry(tc.spec) })
			if tc.panic == "" && got != "" || !strings.Contains(got, tc.panic) {
				t.Errorf("NewRegistry panic = %q, want %q", got, tc.panic)
			}
			got = catch(func() { tc.spec.Build(Build{}) })
			if tc.panic == "" && got != "" || !strings.Contains(got, tc.panic) {
				t.Errorf("Build panic = %q, want %q", got, tc.panic)
			}
		})
	}
}

// TestBuild: Build sets the field of the spec's kind, and Impl returns it.
func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want Built
	}{
		{Spec{Kind: KindSource, NewSource: newTestSource}, Built{Source: testSource{}}},
		{Spec{Kind: KindTransform, NewTransform: newTestTransform}, Built{Transform: testTransform{}}},
		{Spec{Kind: KindSink, NewSink: newTestSink}, Built{Sink: testSink{}}},
	} {
		got, diags := tc.spec.Build(Build{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if got != tc.want || got.Impl() == nil || got.Impl() != tc.want.Impl() {
			t.Errorf("%s: Build = %+v, want %+v", tc.spec.Kind, got, tc.want)
		}
	}
	none, _ := Spec{Kind: KindSink, NewSink: func(Build) (Sink, hcl.Diagnostics) { return nil, nil }}.Build(Build{})
	if none.Impl() != nil {
		t.Errorf("Impl of nothing built = %v, want nil", none.Impl())
	}
}

func catch(f func()) (msg string) {
	defer func() {
		if p := recover(); p != nil {
			msg = fmt.Sprint(p)
		}
	}()
	f()
	return ""
}
