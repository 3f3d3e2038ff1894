/*
 * probe_privileges.h — giving up the privilege to lower nice values, for the C probes that test
 * the unprivileged case for real (nice_clamp_probe.c, unprivileged_nice_probe.c). Included by a
 * probe's .c file (ProbeBuilder compiles each probe on its own); no library of its own.
 */
#ifndef OPERATIONS_PROBE_PRIVILEGES_H
#define OPERATIONS_PROBE_PRIVILEGES_H

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Drops CAP_SYS_NICE from the effective, permitted and inheritable sets with the raw
 * capget/capset system calls (no libcap), then checks it is gone. 0, or an errno value. */
static inline int probe_drop_cap_sys_nice(void) {
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return errno;
    unsigned word = CAP_SYS_NICE / 32;
    uint32_t bit = 1u << (CAP_SYS_NICE % 32);
    data[word].effective &= ~bit;
    data[word].permitted &= ~bit;
    data[word].inheritable &= ~bit;
    if (syscall(SYS_capset, &header, data) != 0) return errno;
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return errno;
    if ((data[word].effective | data[word].permitted | data[word].inheritable) & bit) return EPERM;
    return 0;
}

#endif
