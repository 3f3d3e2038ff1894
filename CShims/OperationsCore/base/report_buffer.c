/*
 * report_buffer.c — the bounded text buffer the reports write into (op_runtime_describe and
 * op_queue_describe, their JSON forms, the trace writer's headers): appends that count what
 * would have been written, as snprintf does, so a caller learns the size it needs; and JSON
 * string escaping (RFC 8259) for labels and names, which are the caller's text.
 *
 * Owns nothing: the buffer is the caller's. No atomics; each report is one thread's.
 */
#include "base.h"

#include <stdarg.h>

void op_report_add(op_report *report, const char *format, ...) {
    va_list args;
    va_start(args, format);
    size_t room = report->length < report->size ? report->size - report->length : 0;
    int n = vsnprintf(room ? report->buffer + report->length : NULL, room, format, args);
    va_end(args);
    if (n > 0) report->length += (size_t)n;
}

void op_report_json_string(op_report *report, const char *text) {
    op_report_add(report, "\"");
    for (const unsigned char *c = (const unsigned char *)(text ? text : ""); *c; c++) {
        switch (*c) {
        case '"': op_report_add(report, "\\\""); break;
        case '\\': op_report_add(report, "\\\\"); break;
        case '\n': op_report_add(report, "\\n"); break;
        case '\r': op_report_add(report, "\\r"); break;
        case '\t': op_report_add(report, "\\t"); break;
        default:
            if (*c < 0x20) {
                op_report_add(report, "\\u%04x", *c);
            } else {
                op_report_add(report, "%c", *c); /* UTF-8 passes through byte by byte */
            }
        }
    }
    op_report_add(report, "\"");
}
