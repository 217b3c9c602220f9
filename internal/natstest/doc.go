// Package natstest runs real nats-servers for tests: an embedded server from
// the nats-server Go module (Embedded), and a nats-server child process
// (External) built from the same module into .cache/nats/<version> the first
// time a test needs it. Both restart on the same port and store directory, so
// tests can cut a connection mid-stream and check what survives. Cluster starts
// several processes routed into one JetStream cluster on loopback. It is for
// tests only; production code embeds the server through internal/natsconn.
package natstest
