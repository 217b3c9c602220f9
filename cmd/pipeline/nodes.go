package main

import (
	"github.com/pipeline/pipeline/engine/node"
	logsink "github.com/pipeline/pipeline/sinks/log"
	"github.com/pipeline/pipeline/sources/static"
)

// registry lists every node type of this build: to add a type, create its
// folder and add its Spec here.
func registry() *node.Registry {
	return node.NewRegistry(
		static.Spec(),
		logsink.Spec(),
	)
}
