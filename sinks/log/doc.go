// Package log implements sink "log": one line per delta on standard output
// or a file, for debugging and demos. It has no readable state, so plan
// lists what it would print and the engine never prunes it. Durable,
// tamper-evident records of every change are sink "audit".
package log
