/*
 * env.c — on/off environment variables, one spelling for all of them.
 *
 * OPERATIONS_NUMA and OPERATIONS_NICE_WARNINGS (and any later switch) are read with
 * op_env_flag: case-insensitively, off / 0 / false / no / disable / disabled mean off and
 * on / 1 / true / yes / enable / enabled mean on; unset or empty means the default. Any other
 * value keeps the default and prints one line on stderr naming the variable, the value and what
 * is accepted. Each variable is read once, under its file's pthread_once, so the line is printed
 * at most once per variable.
 */
#include "internal.h"

#include <ctype.h>
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
