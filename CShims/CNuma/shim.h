/* CNuma — the system library libnuma (Debian: libnuma-dev), for Swift and for OperationsCore. */
#ifndef CNUMA_SHIM_H
#define CNUMA_SHIM_H
#include <numa.h>
#include <numaif.h>
#endif
