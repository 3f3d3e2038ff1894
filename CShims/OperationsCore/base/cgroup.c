/*
 * cgroup.c — the CPU limit of the process's cgroup (a container's CPU quota).
 *
 * A container limited to 2 CPUs' worth of time on a 96-CPU host still has all 96 CPUs in its
 * affinity mask. Sizing queues from the mask there makes every default-width queue run 96 tasks
 * at once on 2 CPUs of time: the kernel throttles the whole cgroup every period. So, like Go
 * 1.25's GOMAXPROCS, the JVM and .NET, the core reads the quota and sizes the default queue
 * width from it: effective CPUs = min(affinity CPUs, ceil(quota / period)), at least 1. The
 * workers are not affected: one per CPU of the affinity mask, pinned, as before (the quota is
 * time, not CPUs: any CPU of the mask may run the cgroup's threads).
 *
 * Where the limit is read (once, under topology.c's pthread_once):
 *   1. /proc/self/cgroup names the process's cgroup: "0::/path" for cgroup v2, and
 *      "N:cpu,cpuacct:/path" for the v1 hierarchy holding the cpu controller.
 *   2. /proc/self/mountinfo gives where that hierarchy is mounted (fstype cgroup2, or cgroup
 *      with "cpu" among its super options) and which of its directories the mount shows (its
 *      root field: inside a container the mount root is often the container's own cgroup).
 *      The cgroup's directory is mountpoint + (path - mount root).
 *   3. From that directory up to the mount point, each level may limit the CPU time:
 *        v2: cpu.max, "max 100000" (no limit) or "200000 100000" (quota and period in µs);
 *        v1: cpu.cfs_quota_us ("-1": no limit) and cpu.cfs_period_us.
 *      The tightest level wins (a parent's limit binds its children). A level without the
 *      files (the root cgroup, a controller not enabled) sets no limit.
 *   When the process has a v1 cpu hierarchy it is used (hybrid systems keep the cpu controller
 *   there); otherwise v2.
 *
 * Tests and unusual systems: OPERATIONS_CGROUP_ROOT=<dir> replaces all of that. The directory is
 * taken as the process's own cgroup directory (and the mount point: no parents are read):
 * cpu.max there means v2, else cpu.cfs_quota_us means v1, else there is no limit.
 *
 * Errors: a limit file that exists but cannot be read or parsed ("banana", "0 100000") sets no
 * limit at all and is reported: the message goes to op_runtime_topology()'s quota_error and
 * topology.c prints it once on stderr. Missing /proc files (no procfs) mean no limit, silently.
 */
#include "base.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#define OP_CGROUP_PATH_MAX 4096

/* Reads a small file whole into `buffer` (NUL-terminated). Returns 0, or an errno value. */
static int op_read_small_file(const char *path, char *buffer, size_t size) {
    FILE *file = fopen(path, "re");
    if (!file) return errno ? errno : EIO;
    size_t length = fread(buffer, 1, size - 1, file);
    int failed = ferror(file);
    fclose(file);
    if (failed) return EIO;
    buffer[length] = '\0';
    return 0;
}

/* A decimal number without sign that fits in int64 and is > 0, ending at `*end`. */
static bool op_parse_positive(const char *text, const char **end, int64_t *out) {
    if (*text < '0' || *text > '9') return false;
    int64_t value = 0;
    while (*text >= '0' && *text <= '9') {
        int digit = *text - '0';
        if (value > (INT64_MAX - digit) / 10) return false;
        value = value * 10 + digit;
        text++;
    }
    *end = text;
    *out = value;
    return value > 0;
}

/* Only blanks (a trailing newline) are left. */
static bool op_only_blanks(const char *text) {
    while (*text == ' ' || *text == '\t' || *text == '\n') text++;
    return *text == '\0';
}

static void op_cgroup_fail(op_cgroup_cpu_limit *out, const char *path, const char *content,
                           const char *what) {
    if (out->error[0]) return; /* the first problem is the one reported */
    char shown[64];
    size_t n = 0;
    for (const char *c = content ? content : ""; *c && n + 1 < sizeof shown; c++) {
        shown[n++] = (*c == '\n' || *c == '\t') ? ' ' : *c;
    }
    while (n > 0 && shown[n - 1] == ' ') n--;
    shown[n] = '\0';
    if (content) {
        snprintf(out->error, sizeof out->error, "%s: %s (\"%s\")", path, what, shown);
    } else {
        snprintf(out->error, sizeof out->error, "%s: %s", path, what);
    }
}

/* Applies one level's quota and period (µs) to the limit: the tightest wins. */
static void op_cgroup_apply(op_cgroup_cpu_limit *out, int64_t quota, int64_t period) {
    double cpus = (double)quota / (double)period;
    int64_t ceiling = quota / period + (quota % period != 0);
    int whole = ceiling > INT_MAX ? INT_MAX : (int)ceiling;
    if (out->quota == 0 || cpus < out->quota) out->quota = cpus;
    if (out->cpus == 0 || whole < out->cpus) out->cpus = whole;
}

/* Reads `dir`/`name` into `content` and its path into `path` (OP_CGROUP_PATH_MAX + 32 bytes).
 * False when there is nothing to use: the file does not exist (`missing_ok`: no limit at this
 * level) or could not be read (reported in `out`). */
static bool op_cgroup_read_file(op_cgroup_cpu_limit *out, const char *dir, const char *name,
                                bool missing_ok, char *path, char *content, size_t size) {
    snprintf(path, OP_CGROUP_PATH_MAX + 32, "%s/%s", dir, name);
    int rc = op_read_small_file(path, content, size);
    if (missing_ok && (rc == ENOENT || rc == ENOTDIR)) return false;
    if (rc != 0) {
        op_cgroup_fail(out, path, NULL, strerror(rc));
        return false;
    }
    return true;
}

/* cgroup v2: `dir`/cpu.max. */
static void op_cgroup_read_v2(op_cgroup_cpu_limit *out, const char *dir) {
    char path[OP_CGROUP_PATH_MAX + 32];
    char content[128];
    if (!op_cgroup_read_file(out, dir, "cpu.max", true, path, content, sizeof content)) return;
    const char *p = content;
    int64_t quota = 0, period = 0;
    bool unlimited = strncmp(p, "max", 3) == 0;
    if (unlimited) {
        p += 3;
    } else if (!op_parse_positive(p, &p, &quota)) {
        op_cgroup_fail(out, path, content, "expected \"max PERIOD\" or \"QUOTA PERIOD\"");
        return;
    }
    if (*p != ' ' || !op_parse_positive(p + 1, &p, &period) || !op_only_blanks(p)) {
        op_cgroup_fail(out, path, content, "expected \"max PERIOD\" or \"QUOTA PERIOD\"");
        return;
    }
    if (!unlimited) op_cgroup_apply(out, quota, period);
}

/* cgroup v1: `dir`/cpu.cfs_quota_us and cpu.cfs_period_us. */
static void op_cgroup_read_v1(op_cgroup_cpu_limit *out, const char *dir) {
    char path[OP_CGROUP_PATH_MAX + 32];
    char content[128];
    if (!op_cgroup_read_file(out, dir, "cpu.cfs_quota_us", true, path, content, sizeof content)) return;
    const char *p = content;
    int64_t quota = 0, period = 0;
    if (strncmp(p, "-1", 2) == 0 && op_only_blanks(p + 2)) return; /* no limit */
    if (!op_parse_positive(p, &p, &quota) || !op_only_blanks(p)) {
        op_cgroup_fail(out, path, content, "expected -1 or a positive number of microseconds");
        return;
    }
    if (!op_cgroup_read_file(out, dir, "cpu.cfs_period_us", false, path, content, sizeof content)) return;
    p = content;
    if (!op_parse_positive(p, &p, &period) || !op_only_blanks(p)) {
        op_cgroup_fail(out, path, content, "expected a positive number of microseconds");
        return;
    }
    op_cgroup_apply(out, quota, period);
}

static bool op_file_exists(const char *dir, const char *name) {
    char path[OP_CGROUP_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0;
}

/* Whether the comma-separated `list` holds `word` exactly. */
static bool op_list_has(const char *list, size_t length, const char *word) {
    size_t word_length = strlen(word);
    const char *end = list + length;
    while (list < end) {
        const char *comma = memchr(list, ',', (size_t)(end - list));
        size_t item = comma ? (size_t)(comma - list) : (size_t)(end - list);
        if (item == word_length && memcmp(list, word, item) == 0) return true;
        if (!comma) break;
        list = comma + 1;
    }
    return false;
}

/* mountinfo escapes blanks and backslashes as \ooo; undoes it in place. */
static void op_unescape_octal(char *text) {
    char *out = text;
    for (char *in = text; *in;) {
        if (in[0] == '\\' && in[1] >= '0' && in[1] <= '7' && in[2] >= '0' && in[2] <= '7' &&
            in[3] >= '0' && in[3] <= '7') {
            *out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
            in += 4;
        } else {
            *out++ = *in++;
        }
    }
    *out = '\0';
}

/* Finds the mount of the v2 hierarchy (v1 = false) or of the v1 hierarchy with the cpu
 * controller (v1 = true): its mount point and root, each up to OP_CGROUP_PATH_MAX. */
static bool op_find_cgroup_mount(bool v1, char *mountpoint, char *root) {
    FILE *file = fopen("/proc/self/mountinfo", "re");
    if (!file) return false;
    char *line = NULL;
    size_t capacity = 0;
    bool found = false;
    while (!found && getline(&line, &capacity, file) > 0) {
        /* id parent major:minor root mountpoint options [optional…] - fstype source superoptions */
        char *fields[6] = {0};
        char *save = NULL;
        char *token = strtok_r(line, " \n", &save);
        int n = 0;
        while (token && n < 6) {
            fields[n++] = token;
            token = strtok_r(NULL, " \n", &save);
        }
        if (n < 6) continue;
        while (token && strcmp(token, "-") != 0) token = strtok_r(NULL, " \n", &save);
        if (!token) continue;
        char *fstype = strtok_r(NULL, " \n", &save);
        char *source = strtok_r(NULL, " \n", &save);
        char *options = strtok_r(NULL, " \n", &save);
        (void)source;
        if (!fstype) continue;
        if (v1) {
            if (strcmp(fstype, "cgroup") != 0 || !options) continue;
            if (!op_list_has(options, strlen(options), "cpu")) continue;
        } else if (strcmp(fstype, "cgroup2") != 0) {
            continue;
        }
        if (strlen(fields[3]) >= OP_CGROUP_PATH_MAX || strlen(fields[4]) >= OP_CGROUP_PATH_MAX) continue;
        strcpy(root, fields[3]);
        strcpy(mountpoint, fields[4]);
        op_unescape_octal(root);
        op_unescape_octal(mountpoint);
        found = true;
    }
    free(line);
    fclose(file);
    return found;
}

/* The process's cgroup paths from /proc/self/cgroup: v2 ("0::/path") and the v1 hierarchy with
 * the cpu controller. Each empty when absent. */
static void op_find_own_cgroups(char *v2_path, char *v1_path) {
    v2_path[0] = v1_path[0] = '\0';
    FILE *file = fopen("/proc/self/cgroup", "re");
    if (!file) return;
    char *line = NULL;
    size_t capacity = 0;
    while (getline(&line, &capacity, file) > 0) {
        char *first = strchr(line, ':');
        char *second = first ? strchr(first + 1, ':') : NULL;
        if (!second) continue;
        char *path = second + 1;
        path[strcspn(path, "\n")] = '\0';
        if (strlen(path) >= OP_CGROUP_PATH_MAX) continue;
        const char *controllers = first + 1;
        size_t controllers_length = (size_t)(second - controllers);
        if (first - line == 1 && line[0] == '0' && controllers_length == 0) {
            strcpy(v2_path, path);
        } else if (op_list_has(controllers, controllers_length, "cpu")) {
            strcpy(v1_path, path);
        }
    }
    free(line);
    fclose(file);
}

/* Reads every level from the cgroup's directory up to the mount point. */
static void op_cgroup_walk(op_cgroup_cpu_limit *out, bool v1, const char *mountpoint,
                           const char *root, const char *path) {
    /* The part of `path` below the mount's root; the mount point itself when the cgroup is not
     * under it or climbs out of it (a cgroup namespace that hides the parents). */
    const char *relative = "";
    size_t root_length = strlen(root);
    if (strcmp(root, "/") == 0) {
        relative = path;
    } else if (strncmp(path, root, root_length) == 0 &&
               (path[root_length] == '/' || path[root_length] == '\0')) {
        relative = path + root_length;
    }
    if (strstr(relative, "/..") || strncmp(relative, "..", 2) == 0) relative = "";
    char dir[OP_CGROUP_PATH_MAX * 2 + 2];
    snprintf(dir, sizeof dir, "%s%s%s", mountpoint, relative[0] == '/' || !relative[0] ? "" : "/",
             relative);
    size_t floor = strlen(mountpoint);
    /* Trailing slashes ("/sys/fs/cgroup/" + "/") do not count as levels. */
    while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/') dir[strlen(dir) - 1] = '\0';
    while (floor > 1 && mountpoint[floor - 1] == '/') floor--;
    for (;;) {
        if (v1) {
            op_cgroup_read_v1(out, dir);
        } else {
            op_cgroup_read_v2(out, dir);
        }
        size_t length = strlen(dir);
        if (length <= floor) break;
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < floor) break;
        *slash = '\0';
        if (strlen(dir) < floor) break;
    }
}

void op_cgroup_read_cpu_limit(op_cgroup_cpu_limit *out) {
    memset(out, 0, sizeof *out);
    const char *override = getenv("OPERATIONS_CGROUP_ROOT");
    if (override && *override) {
        out->overridden = true;
        if (op_file_exists(override, "cpu.max")) {
            op_cgroup_read_v2(out, override);
        } else if (op_file_exists(override, "cpu.cfs_quota_us")) {
            op_cgroup_read_v1(out, override);
        }
    } else {
        char *v2_path = malloc(OP_CGROUP_PATH_MAX), *v1_path = malloc(OP_CGROUP_PATH_MAX);
        char *mountpoint = malloc(OP_CGROUP_PATH_MAX), *root = malloc(OP_CGROUP_PATH_MAX);
        if (v2_path && v1_path && mountpoint && root) {
            op_find_own_cgroups(v2_path, v1_path);
            if (v1_path[0] && op_find_cgroup_mount(true, mountpoint, root)) {
                op_cgroup_walk(out, true, mountpoint, root, v1_path);
            } else if (v2_path[0] && op_find_cgroup_mount(false, mountpoint, root)) {
                op_cgroup_walk(out, false, mountpoint, root, v2_path);
            }
        }
        free(v2_path);
        free(v1_path);
        free(mountpoint);
        free(root);
    }
    if (out->error[0]) {
        /* A file we could not make sense of: no limit, rather than a wrong one. */
        out->quota = 0;
        out->cpus = 0;
    }
}
