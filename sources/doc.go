// Package sources is the room of the source node types: the nodes that
// watch the world and publish a collection of records. Each type is its own
// package with a spec.go declaring its Spec:
//
//   - kubernetes: objects of any resource of a Kubernetes API server, through informers
//   - files: Kubernetes objects read from YAML and JSON manifest files, watched for changes
//   - static: fixed records declared in HCL
//   - natskv: the entries of a NATS JetStream key-value bucket
//
// Code shared by the object sources (selectors, index_by, ignore_fields)
// is in internal/kobject. Shaping records is the job of transforms/, and
// writing them the job of sinks/. This package itself holds no code.
package sources
