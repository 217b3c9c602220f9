package main

import (
	"github.com/pipeline/pipeline/engine/node"
	auditsink "github.com/pipeline/pipeline/sinks/audit"
	"github.com/pipeline/pipeline/sinks/ebpfmap"
	kubesink "github.com/pipeline/pipeline/sinks/kubernetes"
	logsink "github.com/pipeline/pipeline/sinks/log"
	natssink "github.com/pipeline/pipeline/sinks/nats"
	natskvsink "github.com/pipeline/pipeline/sinks/natskv"
	promsink "github.com/pipeline/pipeline/sinks/prometheus"
	templatesink "github.com/pipeline/pipeline/sinks/template"
	"github.com/pipeline/pipeline/sources/files"
	"github.com/pipeline/pipeline/sources/kubernetes"
	natskvsource "github.com/pipeline/pipeline/sources/natskv"
	"github.com/pipeline/pipeline/sources/static"
	"github.com/pipeline/pipeline/transforms/aggregate"
	"github.com/pipeline/pipeline/transforms/debounce"
	"github.com/pipeline/pipeline/transforms/extract"
	"github.com/pipeline/pipeline/transforms/filter"
	"github.com/pipeline/pipeline/transforms/graceperiod"
)

// registry lists every node type of this build: to add a type, create its
// folder and add its Spec here.
func registry() *node.Registry {
	return node.NewRegistry(
		// sources
		kubernetes.Spec(),
		files.Spec(),
		static.Spec(),
		natskvsource.Spec(),
		// transforms
		extract.Spec(),
		filter.Spec(),
		debounce.Spec(),
		graceperiod.Spec(),
		aggregate.Spec(),
		// sinks
		ebpfmap.Spec(),
		logsink.Spec(),
		auditsink.Spec(),
		natssink.Spec(),
		natskvsink.Spec(),
		templatesink.Spec(),
		kubesink.Spec(),
		promsink.Spec(),
	)
}
