/*
 * nice.c — QoS classes and threadPriority as Linux nice values.
 *
 * The table (indexed by op_qos_t) defaults to libdispatch's on Linux: background 10,
 * utility 2, default 0, userInitiated -2, userInteractive -4. OPERATIONS_QOS_NICE overrides
 * entries at start-up; op_runtime_set_nice_table at run time (workers pick the new value up
 * before their next task, through a generation number).
 *
 * threadPriority t (0 … 1) moves a task's nice by lround((0.5 - t) * 10): 0.5 keeps the class's
 * nice, 1.0 is five steps higher priority, 0.0 five steps lower (a nice step is a factor of
 * about 1.25 in CPU weight, so 1.0 vs 0.0 is about 9x the weight).
 *
 * Privilege: lowering a thread's nice below its current value needs CAP_SYS_NICE or an
 * RLIMIT_NICE that allows it (lowest settable value = 20 - rlim_cur). Without it we clamp to
 * what can be set AND undone later (a worker must always be able to return to its class's
 * value after a task), record the clamp for introspection (op_runtime_nice_clamped), and say so
 * in one line on stderr when it first happens. A clamp never fails a task.
 *
 * The one line: said only when something asked is actually changed, and then once per process,
 * whichever comes first: a nice value clamped (a task's class or thread priority, a queue's
 * class), or the shifted table below, once a class whose own value lies below the floor is asked
 * for (op_class_requested: a queue, a task or a waiter of that class). A process that uses only
 * classes the floor allows (an unprivileged one running default-QoS work) is told nothing,
 * although its classes run at the shifted values (op_runtime_nice_table_kind says so).
 * OPERATIONS_NICE_WARNINGS=0/off/false/no (env.c) or op_runtime_set_clamp_warning(false) at run
 * time silence it; a report due while it is off is dropped, not kept for later.
 *
 * The floor: the lowest nice a worker can hold, min(lowest settable, the nice of the thread that
 * started the runtime). Workers never renice below their start value without privilege, so they
 * are started at that value: unprivileged, by a spawner thread (spawner.c) made at start-up, so
 * that a pool made from a background body does not inherit nice 10 for good.
 *
 * The shifted table: when the default table goes below the floor (no CAP_SYS_NICE, RLIMIT_NICE
 * 0: userInteractive -4 and userInitiated -2 cannot be had) and OPERATIONS_QOS_NICE is not set,
 * the whole table moves up so that its lowest entry is the floor: {14, 6, 4, 2, 0} from a
 * nice-0 process. The classes keep their differences (and their CPU shares against each other);
 * the price is that the process's default work runs at nice 4, below other processes' nice-0
 * threads. Reported by op_runtime_nice_table_kind; said on stderr as above.
 */
#include "base.h"

#include <errno.h>
#include <linux/capability.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const op_qos_names[OP_QOS_COUNT] = {
    "background", "utility", "default", "userInitiated", "userInteractive",
};

/* Five letters at most, for thread names (15 characters in all on Linux). */
static const char *const op_qos_short_names[OP_QOS_COUNT] = {
    "bkgd", "util", "dflt", "uinit", "uiact",
};

const char *op_qos_short_name(int qos) {
    return (unsigned)qos < OP_QOS_COUNT ? op_qos_short_names[qos] : "other";
}

const char *op_qos_name(int qos) {
    if (qos == OP_QOS_INHERIT) return "inherit";
    return (unsigned)qos < OP_QOS_COUNT ? op_qos_names[qos] : "unknown";
}

/* Table and generation: written rarely (start-up, set_nice_table), read by workers before each
 * task. Each entry is its own atomic so readers never see a torn value. */
static _Atomic int op_nice_table_values[OP_QOS_COUNT] = {10, 2, 0, -2, -4};
_Atomic uint32_t op_nice_table_generation = 1;

static int op_lowest_settable = -20;   /* fixed after init */
static bool op_negative_allowed = true; /* fixed after init */
static int op_floor_nice = -20;        /* fixed after init: see the file comment */
static int op_rlimit_nice = -1;        /* RLIMIT_NICE's soft limit (-1: unlimited / unknown) */
static bool op_cap_sys_nice = true;    /* fixed after init */
static _Atomic int op_table_kind = OP_NICE_TABLE_DEFAULT;
static _Atomic bool op_clamped = false;
static _Atomic bool op_clamp_warning = true;
/* The one line (see the file comment) was printed: the shift's and the clamps' share it. */
static _Atomic bool op_nice_warned = false;
/* The shifted table: the values it was shifted from and what it became, as text, for its
 * report. Written once in op_nice_init_once, before the OP_CLASS_REPORT_SHIFT bits (released
 * with them; op_class_report acquires them before reading these). */
static int op_unshifted_values[OP_QOS_COUNT];
static char op_shifted_text[128];

_Atomic uint32_t op_class_reports_pending = 0;
static char op_env_error[256];
static bool op_env_error_set = false;

static pthread_once_t op_nice_once = PTHREAD_ONCE_INIT;

int op_current_tid(void) { return (int)syscall(SYS_gettid); }

int op_current_thread_id(void) { return op_current_tid(); }

static bool op_has_cap_sys_nice(void) {
    struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return false;
    return (data[CAP_SYS_NICE / 32].effective >> (CAP_SYS_NICE % 32)) & 1u;
}

static void op_nice_init_once(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NICE, &limit) == 0) {
        op_rlimit_nice = limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur > 40 ? 40
                                                                                : (int)limit.rlim_cur;
    }
    op_cap_sys_nice = op_has_cap_sys_nice();
    if (op_cap_sys_nice) {
        op_lowest_settable = -20;
    } else {
        int lowest = op_rlimit_nice >= 0 ? 20 - op_rlimit_nice : 20; /* 0: no lowering at all */
        op_lowest_settable = lowest < -20 ? -20 : lowest;
    }
    op_negative_allowed = op_lowest_settable < 0;
    int start_nice = op_current_thread_nice();
    op_floor_nice = op_lowest_settable < start_nice ? op_lowest_settable : start_nice;
    /* Without the right to lower, workers must start at the floor (see spawner.c). */
    if (op_lowest_settable > -20) op_spawner_start();

    if (!op_env_flag("OPERATIONS_NICE_WARNINGS", true)) atomic_store(&op_clamp_warning, false);

    const char *spec = getenv("OPERATIONS_QOS_NICE");
    if (spec && *spec) {
        int table[OP_QOS_COUNT];
        /* Not op_runtime_nice_table: that would re-enter pthread_once and wait on itself. */
        for (int i = 0; i < OP_QOS_COUNT; i++) table[i] = op_nice_of_class(i);
        char error[200];
        if (op_runtime_parse_nice_spec(spec, table, error, sizeof error) == 0) {
            for (int i = 0; i < OP_QOS_COUNT; i++) {
                atomic_store_explicit(&op_nice_table_values[i], table[i], memory_order_relaxed);
            }
        } else {
            snprintf(op_env_error, sizeof op_env_error, "OPERATIONS_QOS_NICE: %s; keeping the defaults",
                     error);
            op_env_error_set = true;
            fprintf(stderr, "operations: %s\n", op_env_error);
        }
        if (!op_env_error_set) {
            atomic_store_explicit(&op_table_kind, OP_NICE_TABLE_ENVIRONMENT, memory_order_relaxed);
            return;
        }
    }
    /* The default table (or a rejected spec's): shift it up when the floor refuses its low end. */
    int lowest_entry = 19;
    for (int i = 0; i < OP_QOS_COUNT; i++) {
        int value = op_nice_of_class(i);
        if (value < lowest_entry) lowest_entry = value;
    }
    if (lowest_entry >= op_floor_nice) return;
    int shift = op_floor_nice - lowest_entry;
    int n = 0;
    uint32_t below_floor = 0;
    for (int i = OP_QOS_COUNT - 1; i >= 0; i--) {
        op_unshifted_values[i] = op_nice_of_class(i);
        if (op_unshifted_values[i] < op_floor_nice) below_floor |= OP_CLASS_REPORT_SHIFT(i);
        int value = op_unshifted_values[i] + shift;
        if (value > 19) value = 19;
        atomic_store_explicit(&op_nice_table_values[i], value, memory_order_relaxed);
        n += snprintf(op_shifted_text + n, sizeof op_shifted_text - (size_t)n, "%s%s=%d",
                      i == OP_QOS_COUNT - 1 ? "" : ",", op_qos_names[i], value);
    }
    atomic_store_explicit(&op_table_kind, OP_NICE_TABLE_SHIFTED, memory_order_relaxed);
    /* Said when one of the classes that could not be had is asked for (op_class_report), not
     * now: a process that never uses them is not told. release: the values and the text above
     * before the bits that make a reporter read them (callers also went through op_nice_init,
     * or acquired a pool published after it; this does not lean on that). */
    atomic_fetch_or_explicit(&op_class_reports_pending, below_floor, memory_order_release);
}

/* Whether the caller prints the one line: warnings on, and nobody printed it yet. */
static bool op_nice_claim_warning(void) {
    /* relaxed: a switch, and a flag whose exchange only decides who prints. */
    if (!atomic_load_explicit(&op_clamp_warning, memory_order_relaxed)) return false;
    if (atomic_load_explicit(&op_nice_warned, memory_order_relaxed)) return false;
    return !atomic_exchange_explicit(&op_nice_warned, true, memory_order_relaxed);
}

/* Class `qos`, whose value in the table the shift was made from lies below the floor, was asked
 * for: says what it asked and what the process runs instead. */
static void op_report_shift(int qos) {
    if (!op_nice_claim_warning()) return;
    fprintf(stderr,
            "operations: nice %d was asked for (QoS class %s), but this process may not lower a "
            "thread's nice value below %d (no CAP_SYS_NICE, RLIMIT_NICE %d), so QoS classes run "
            "at the shifted nice table %s instead of the default (userInteractive -4 ... "
            "background 10): the classes keep their differences, and this process's threads "
            "yield to other processes' nice-0 threads. To change it: grant CAP_SYS_NICE (docker "
            "run --cap-add=SYS_NICE), raise RLIMIT_NICE (ulimit -e 24, limits.conf 'nice'), or "
            "set OPERATIONS_QOS_NICE. Reported once; OPERATIONS_NICE_WARNINGS=0 or "
            "op_runtime_set_clamp_warning(false) silences it.\n",
            op_unshifted_values[qos], op_qos_names[qos], op_floor_nice, op_rlimit_nice,
            op_shifted_text);
}

void op_class_report(int qos) {
    if ((unsigned)qos >= OP_QOS_COUNT) return;
    /* relaxed: a hint; the fetch_and decides which caller reports. */
    if (atomic_load_explicit(&op_class_reports_pending, memory_order_relaxed) &
        OP_CLASS_REPORT_SHIFT(qos)) {
        /* acquire: the shifted table's values and text, released with the bits. */
        uint32_t before = atomic_fetch_and_explicit(&op_class_reports_pending,
                                                    ~(uint32_t)OP_CLASS_REPORT_SHIFT_ALL,
                                                    memory_order_acquire);
        if (before & OP_CLASS_REPORT_SHIFT(qos)) op_report_shift(qos);
    }
    /* acquire (in time_slice.c): the refusal's text, released with its bit. */
    op_time_slice_report_refusal(qos);
}

void op_nice_init(void) { pthread_once(&op_nice_once, op_nice_init_once); }

int op_nice_of_class(int qos) {
    if (qos < 0 || qos >= OP_QOS_COUNT) qos = OP_QOS_DEFAULT;
    return atomic_load_explicit(&op_nice_table_values[qos], memory_order_relaxed);
}

static void op_report_clamp(int wanted, int applied) {
    /* relaxed: a flag for introspection (op_runtime_nice_clamped), stored once. */
    if (!atomic_load_explicit(&op_clamped, memory_order_relaxed)) {
        atomic_store_explicit(&op_clamped, true, memory_order_relaxed);
    }
    if (op_nice_claim_warning()) {
        char allowed[96];
        if (op_lowest_settable >= 20) {
            snprintf(allowed, sizeof allowed, "may not lower any thread's nice value");
        } else {
            snprintf(allowed, sizeof allowed, "may lower nice values only down to %d",
                     op_lowest_settable);
        }
        fprintf(stderr,
                "operations: nice %d was asked for (a QoS class or threadPriority), but this "
                "process %s and its workers start at %d (lowering needs CAP_SYS_NICE, or "
                "RLIMIT_NICE >= %d; RLIMIT_NICE is %d); running at %d instead. To change it: "
                "grant CAP_SYS_NICE (docker run --cap-add=SYS_NICE), raise RLIMIT_NICE (ulimit -e, "
                "limits.conf 'nice'), or use nice values >= %d (OPERATIONS_QOS_NICE). Reported "
                "once; OPERATIONS_NICE_WARNINGS=0 or op_runtime_set_clamp_warning(false) "
                "silences it.\n",
                wanted, allowed, op_floor_nice, 20 - wanted, op_rlimit_nice, applied,
                op_floor_nice);
    }
}

int op_nice_clamp_class(int wanted, int thread_base) {
    op_nice_init();
    /* Raising (wanted >= base) is always allowed. Below the base, values down to the lowest
     * settable one are allowed; if even that is above the base, stay at the base. */
    int floor = thread_base < op_lowest_settable ? thread_base : op_lowest_settable;
    int applied = wanted < floor ? floor : wanted;
    if (applied != wanted) op_report_clamp(wanted, applied);
    return applied;
}

int op_nice_clamp_task(int wanted, int class_nice) {
    if (wanted == class_nice) return class_nice;
    if (wanted < class_nice) {
        /* Lowering for the body, then raising back (always allowed). */
        int applied = wanted < op_lowest_settable ? op_lowest_settable : wanted;
        if (applied > class_nice) applied = class_nice;
        if (applied != wanted) op_report_clamp(wanted, applied);
        return applied;
    }
    /* Raising for the body is allowed, but only if we may lower back to class_nice after. */
    if (class_nice < op_lowest_settable) {
        op_report_clamp(wanted, class_nice);
        return class_nice;
    }
    return wanted;
}

/* A setpriority the capabilities and RLIMIT_NICE allowed was refused anyway (a seccomp filter,
 * a security profile): said once, with what it means and what to do. */
static void op_report_refused_renice(int nice, int error) {
    static _Atomic bool reported = false;
    /* relaxed: only decides which caller prints. */
    if (atomic_exchange_explicit(&reported, true, memory_order_relaxed)) return;
    fprintf(stderr,
            "operations: setpriority to nice %d was refused (%s) although CAP_SYS_NICE/RLIMIT_NICE "
            "allow it (a seccomp filter or security profile?); threads keep the nice value they "
            "have, so QoS classes and thread priorities may not apply. Allow setpriority for this "
            "process to fix it. Reported once.\n",
            nice, strerror(error));
}

int op_nice_set_current_thread(int nice) {
    int error = 0;
    if (OP_UNLIKELY(op_fault_setpriority_refused())) {
        error = EPERM;
    } else if (setpriority(PRIO_PROCESS, (id_t)op_current_tid(), nice) != 0) {
        error = errno;
    }
    if (OP_UNLIKELY(error != 0)) op_report_refused_renice(nice, error);
    return error;
}

int op_nice_set_thread(int tid, int nice) {
    int error = 0;
    if (OP_UNLIKELY(op_fault_setpriority_refused())) {
        error = EPERM;
    } else if (setpriority(PRIO_PROCESS, (id_t)tid, nice) != 0) {
        error = errno;
    }
    return error; /* not reported: promotion checks the privilege first (op_nice_can_hold) */
}

int op_current_thread_nice(void) {
    errno = 0;
    return getpriority(PRIO_PROCESS, (id_t)op_current_tid());
}

/* ---- public API --------------------------------------------------------------------------- */

void op_runtime_nice_table(int table[OP_QOS_COUNT]) {
    op_nice_init();
    for (int i = 0; i < OP_QOS_COUNT; i++) table[i] = op_nice_of_class(i);
}

int op_runtime_set_nice_table(const int table[OP_QOS_COUNT]) {
    op_nice_init();
    if (!table) return EINVAL;
    for (int i = 0; i < OP_QOS_COUNT; i++) {
        if (table[i] < -20 || table[i] > 19) return EINVAL;
    }
    for (int i = 0; i < OP_QOS_COUNT; i++) {
        atomic_store_explicit(&op_nice_table_values[i], table[i], memory_order_relaxed);
    }
    /* relaxed: a label for introspection. */
    atomic_store_explicit(&op_table_kind, OP_NICE_TABLE_SET, memory_order_relaxed);
    /* The shifted table is gone: its report no longer applies (relaxed: only clears bits; no
     * data is published with them). */
    atomic_fetch_and_explicit(&op_class_reports_pending, ~(uint32_t)OP_CLASS_REPORT_SHIFT_ALL,
                              memory_order_relaxed);
    /* release: publishes the entries above to workers that acquire the generation. */
    atomic_fetch_add_explicit(&op_nice_table_generation, 1, memory_order_release);
    return 0;
}

static void op_set_error(char *error, size_t size, const char *format, const char *entry,
                         size_t entry_len) {
    if (!error || size == 0) return;
    char quoted[96];
    size_t n = entry_len < sizeof quoted - 1 ? entry_len : sizeof quoted - 1;
    memcpy(quoted, entry, n);
    quoted[n] = 0;
    snprintf(error, size, format, quoted);
}

int op_runtime_parse_nice_spec(const char *spec, int table[OP_QOS_COUNT], char *error,
                               size_t error_size) {
    if (!spec || !table) {
        if (error && error_size) snprintf(error, error_size, "no spec given");
        return EINVAL;
    }
    int result[OP_QOS_COUNT];
    memcpy(result, table, sizeof result);
    const char *p = spec;
    if (*p == 0) {
        if (error && error_size) snprintf(error, error_size, "empty spec");
        return EINVAL;
    }
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (len == 0) {
            op_set_error(error, error_size, "empty entry '%s' (stray comma)", p, 0);
            return EINVAL;
        }
        if (!eq) {
            op_set_error(error, error_size, "bad entry '%s': expected class=nice", p, len);
            return EINVAL;
        }
        size_t name_len = (size_t)(eq - p);
        int qos = -1;
        for (int i = 0; i < OP_QOS_COUNT; i++) {
            if (strlen(op_qos_names[i]) == name_len &&
                strncasecmp(op_qos_names[i], p, name_len) == 0) {
                qos = i;
            }
        }
        if (qos < 0) {
            op_set_error(error, error_size,
                         "bad entry '%s': unknown class (expected userInteractive, "
                         "userInitiated, default, utility or background)",
                         p, len);
            return EINVAL;
        }
        const char *num = eq + 1;
        size_t num_len = len - name_len - 1;
        char buf[16];
        if (num_len == 0 || num_len >= sizeof buf) {
            op_set_error(error, error_size, "bad entry '%s': expected an integer nice value", p,
                         len);
            return EINVAL;
        }
        memcpy(buf, num, num_len);
        buf[num_len] = 0;
        char *stop = NULL;
        errno = 0;
        long value = strtol(buf, &stop, 10);
        if (errno != 0 || stop == buf || *stop != 0) {
            op_set_error(error, error_size, "bad entry '%s': expected an integer nice value", p,
                         len);
            return EINVAL;
        }
        if (value < -20 || value > 19) {
            op_set_error(error, error_size, "bad entry '%s': nice must be within -20 ... 19", p,
                         len);
            return EINVAL;
        }
        result[qos] = (int)value;
        if (!end) break;
        p = end + 1;
    }
    memcpy(table, result, sizeof result);
    return 0;
}

const char *op_runtime_nice_env_error(void) {
    op_nice_init();
    return op_env_error_set ? op_env_error : NULL;
}

int op_runtime_nice_for(op_qos_t qos, double thread_priority) {
    op_nice_init();
    if (!(thread_priority >= 0.0)) thread_priority = 0.0; /* also catches NaN */
    if (thread_priority > 1.0) thread_priority = 1.0;
    int nice = op_nice_of_class((int)qos) + (int)lround((0.5 - thread_priority) * 10.0);
    if (nice < -20) nice = -20;
    if (nice > 19) nice = 19;
    return nice;
}

bool op_runtime_negative_nice_allowed(void) {
    op_nice_init();
    return op_negative_allowed;
}

int op_runtime_lowest_nice(void) {
    op_nice_init();
    return op_lowest_settable;
}

int op_runtime_nice_floor(void) {
    op_nice_init();
    return op_floor_nice;
}

op_nice_table_kind_t op_runtime_nice_table_kind(void) {
    op_nice_init();
    /* relaxed: a label, written at start-up or by op_runtime_set_nice_table. */
    return (op_nice_table_kind_t)atomic_load_explicit(&op_table_kind, memory_order_relaxed);
}

bool op_nice_can_hold(int nice) {
    op_nice_init();
    return nice >= op_lowest_settable;
}

bool op_runtime_nice_clamped(void) {
    return atomic_load_explicit(&op_clamped, memory_order_relaxed);
}

void op_runtime_set_clamp_warning(bool enabled) {
    op_nice_init(); /* the environment's choice first, so that this one wins */
    /* relaxed: a switch with no data behind it. */
    atomic_store_explicit(&op_clamp_warning, enabled, memory_order_relaxed);
}

bool op_runtime_clamp_warning(void) {
    op_nice_init();
    /* relaxed: a switch with no data behind it. */
    return atomic_load_explicit(&op_clamp_warning, memory_order_relaxed);
}

int op_thread_priority_apply(op_qos_t qos, double thread_priority) {
    int current = op_current_thread_nice();
    int target = op_nice_clamp_task(op_runtime_nice_for(qos, thread_priority), current);
    if (target == current || op_nice_set_current_thread(target) != 0) return OP_NICE_UNCHANGED;
    return current;
}

void op_thread_priority_restore(int previous) {
    if (previous != OP_NICE_UNCHANGED) op_nice_set_current_thread(previous);
}
