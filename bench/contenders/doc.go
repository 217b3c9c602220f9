// Package contenders holds the programs the benchmark table measures the
// pipeline against: each is its own small main package linking only
// client-go and cilium/ebpf, as a team writing the job by hand would, so
// that it pays its own start-up and not the pipeline's.
//
//	floor       one LIST of the pods (protobuf or -json, resourceVersion 0), one BatchUpdate of their IPs
//	controller  a typed pod informer -> workqueue -> one Map.Put per IP, until SIGTERM;
//	            client-go's defaults (a watch-list initial sync), and run again with
//	            KUBE_FEATURE_WatchListClient=false to list instead
//	planfloor   one LIST of the pods and one BatchLookup read of the pinned map, then exit
//	ssafloor    server-side applies of n ConfigMaps by a fixed number of workers, then exit (row K1)
//
// kit holds what they share (client set-up, the map they fill). The
// benchtable program builds them with the flags the pipeline binary is
// built with and runs each as a fresh process.
package contenders
