/*
 * report_buffer.c — the bounded text buffer the reports write into (op_runtime_describe and
 * op_queue_describe, their JSON forms, the trace writer's headers): appends that count what
 * would have been written, as snprintf does, so a caller learns the size it needs; and JSON
 * string escaping (RFC 8259) for labels and names, which are the caller's text (or the kernel's,
 * cut at 15 bytes: invalid UTF-8 becomes U+FFFD, so the output always parses).
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

size_t op_utf8_char_length(const unsigned char *c) {
    size_t length;
    uint32_t min;
    if (c[0] >= 0xC2 && c[0] <= 0xDF) {
        length = 2, min = 0x80;
    } else if (c[0] >= 0xE0 && c[0] <= 0xEF) {
        length = 3, min = 0x800;
    } else if (c[0] >= 0xF0 && c[0] <= 0xF4) {
        length = 4, min = 0x10000;
    } else {
        return 0;
    }
    uint32_t point = c[0] & (0x7F >> length);
    for (size_t i = 1; i < length; i++) {
        if ((c[i] & 0xC0) != 0x80) return 0; /* also stops at the terminating NUL */
        point = (point << 6) | (c[i] & 0x3F);
    }
    if (point < min || point > 0x10FFFF || (point >= 0xD800 && point <= 0xDFFF)) return 0;
    return length;
}

void op_report_json_string(op_report *report, const char *text) {
    op_report_add(report, "\"");
    for (const unsigned char *c = (const unsigned char *)(text ? text : ""); *c;) {
        switch (*c) {
        case '"': op_report_add(report, "\\\""); c++; continue;
        case '\\': op_report_add(report, "\\\\"); c++; continue;
        case '\n': op_report_add(report, "\\n"); c++; continue;
        case '\r': op_report_add(report, "\\r"); c++; continue;
        case '\t': op_report_add(report, "\\t"); c++; continue;
        default: break;
        }
        if (*c < 0x20) {
            op_report_add(report, "\\u%04x", *c++);
        } else if (*c < 0x80) {
            op_report_add(report, "%c", *c++);
        } else {
            size_t length = op_utf8_char_length(c);
            if (length == 0) {
                op_report_add(report, "\\ufffd"); /* not UTF-8: a name cut mid-character */
                c++;
            } else {
                op_report_add(report, "%.*s", (int)length, (const char *)c);
                c += length;
            }
        }
    }
    op_report_add(report, "\"");
}
