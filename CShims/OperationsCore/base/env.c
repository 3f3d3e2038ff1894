/*
 * env.c — the environment variables' parsers: on/off switches with one spelling for all of
 * them, and whole numbers.
 *
 * OPERATIONS_NUMA, OPERATIONS_NICE_WARNINGS, OPERATIONS_QOS_PROMOTION and OPERATIONS_SHORT_SLICE
 * (and any later switch) are read with op_env_flag: case-insensitively, off / 0 / false / no /
 * disable / disabled mean off and on / 1 / true / yes / enable / enabled mean on; unset or
 * empty means the default. Numbers (OPERATIONS_PLACED_POOL_IDLE_MS) are read with op_env_int: a
 * decimal whole number within the variable's range. Any other value keeps the default and prints
 * one line on stderr naming the variable, the value and what is accepted. Each variable is read
 * once, under its file's pthread_once, so the line is printed at most once per variable.
 * Every variable the runtime reads is listed in operations_core.h's ENVIRONMENT section.
 */
#include "base.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const op_env_off_words[] = {"off", "0", "false", "no", "disable", "disabled"};
static const char *const op_env_on_words[] = {"on", "1", "true", "yes", "enable", "enabled"};

int op_env_parse_flag(const char *value) {
    if (!value) return -1;
    /* Surrounding blanks are forgiven ("off\n" from a shell file). */
    while (isspace((unsigned char)*value)) value++;
    size_t length = strlen(value);
    while (length > 0 && isspace((unsigned char)value[length - 1])) length--;
    for (size_t i = 0; i < sizeof op_env_off_words / sizeof *op_env_off_words; i++) {
        if (strlen(op_env_off_words[i]) == length &&
            strncasecmp(value, op_env_off_words[i], length) == 0) {
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof op_env_on_words / sizeof *op_env_on_words; i++) {
        if (strlen(op_env_on_words[i]) == length &&
            strncasecmp(value, op_env_on_words[i], length) == 0) {
            return 1;
        }
    }
    return -1;
}

bool op_env_flag(const char *name, bool default_value) {
    const char *value = getenv(name);
    if (!value || !*value) return default_value;
    int parsed = op_env_parse_flag(value);
    if (parsed >= 0) return parsed == 1;
    fprintf(stderr,
            "operations: %s=\"%s\" is not recognised; accepted (any case): off, 0, false, no, "
            "disable, disabled, or on, 1, true, yes, enable, enabled. Using the default (%s).\n",
            name, value, default_value ? "on" : "off");
    return default_value;
}

int op_env_parse_int(const char *value, int64_t min, int64_t max, int64_t *out) {
    if (!value) return EINVAL;
    /* Surrounding blanks are forgiven, as for the switches; a sign, a unit or anything else is
     * not a whole number (strtoll alone would take "-5", " +5" and stop silently at "10ms"). */
    while (isspace((unsigned char)*value)) value++;
    size_t length = strlen(value);
    while (length > 0 && isspace((unsigned char)value[length - 1])) length--;
    if (length == 0) return EINVAL;
    for (size_t i = 0; i < length; i++) {
        if (!isdigit((unsigned char)value[i])) return EINVAL;
    }
    /* Digits only: the value is at least 0; overflow is caught by hand, without strtoll's
     * errno, so that 9223372036854775808 and longer are "out of range", not wrapped. */
    int64_t number = 0;
    for (size_t i = 0; i < length; i++) {
        int digit = value[i] - '0';
        if (number > (INT64_MAX - digit) / 10) return ERANGE;
        number = number * 10 + digit;
    }
    if (number < min || number > max) return ERANGE;
    *out = number;
    return 0;
}

int64_t op_env_int(const char *name, int64_t default_value, int64_t min, int64_t max,
                   const char *unit) {
    const char *value = getenv(name);
    if (!value || !*value) return default_value;
    int64_t number = 0;
    if (op_env_parse_int(value, min, max, &number) == 0) return number;
    fprintf(stderr,
            "operations: %s=\"%s\" is not recognised; accepted: a whole number of %s from %" PRId64
            " to %" PRId64 " (decimal digits only). Using the default (%" PRId64 ").\n",
            name, value, unit, min, max, default_value);
    return default_value;
}
