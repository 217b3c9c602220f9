// Package bench is pipeline's performance table: the scenarios behind
// `make bench` (command bench/cmd/benchtable), and benchmarks that run
// whole graphs through the engine (chain_test.go).
//
// Each scenario measures its rows and the floor or peer each row is
// compared with in the same run, with the contenders interleaved so they
// share the machine's state: the start-up of the pipeline binary against
// the floor program's (P0), the initial sync of 10,000 pods from a real
// kube-apiserver into a pinned BPF map by a raw LIST + BatchUpdate (the
// floor), by a hand-written client-go controller and by `pipeline run`
// (P1), the resident memory those pods add to the controller and to the
// README's flagship chain (P4), the same initial sync at 100,000 pods by
// the floor and by the pipeline's LIST and watch-list with the API
// server's memory rise during each (P11), the latency of one change
// against a raw watch (P2), sustained churn through extract -> debounce ->
// ebpf_map in process (P3), validate of 1,000 blocks (P8), a hub and 50
// agents over NATS, each agent its own process and pinned map (P9), the
// same hub with 1,000 agents packed 100 to a process by bench/cmd/agents
// and the memory they add to the hub (P9b, P9c), and the ebpf_map
// reconcile rows. Contenders run as fresh processes: the floor
// and the hand-written controller are small programs of their own
// (bench/contenders, linking only client-go and cilium/ebpf), built by
// `make contenders`, so that none pays this program's start-up; inputs are
// built before a clock starts.
//
// Adding a row: write one function `func name(ctx context.Context, e *Env)
// ([]Row, error)` in a file of its own (p5_reload.go), build its rows with
// measured(...) and .against(ref, goal), and put it in the scenarios list
// in rows.go. Env gives the shared API
// server and pods (e.kube), processes (e.startProc) and the sizes
// (e.opts); a scenario that needs root returns skipped rows saying why.
//
// Not here: micro-benchmarks of one node type against its physical floor
// live beside the type (sinks/ebpfmap, sources/kubernetes); the table
// runs some of them through `go test -bench` (gobench.go).
package bench
