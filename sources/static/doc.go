// Package static implements source "static": fixed records declared in HCL,
// such as static CIDR networks that sit beside the dynamic pod IPs in an
// allow-list. It needs no cluster. Objects from files are source "files";
// live objects are source "kubernetes".
package static
