/*
 * trace.c — the trace recorder and its writer (issue 35, item 4): a timeline a person opens in
 * Perfetto (ui.perfetto.dev) or chrome://tracing, in Chrome's Trace Event JSON.
 *
 * Recording. op_trace_start (or OPERATIONS_TRACE=<file> in the environment, read when the
 * library loads) sets op_trace_recording; the observation points (observe.h) then append one
 * fixed-size event (op_trace_event, 64 bytes) to the calling thread's own buffer: no lock, no
 * shared write, no allocation but the buffer's, made at a thread's first event of a trace. A
 * buffer is an anonymous mapping its pages come into as they are written, so an idle thread
 * costs address space only. Two modes:
 *   - whole trace (the default): each thread keeps up to OP_TRACE_THREAD_EVENTS events; the
 *     ones beyond are dropped and counted (the trace says so, and stderr once);
 *   - flight recorder (op_trace_start's flight_bytes, OPERATIONS_TRACE_FLIGHT_MB): each thread's
 *     buffer is a ring holding its latest events, flight_bytes shared out over twice the CPUs;
 *     op_trace_write writes what the rings hold at any moment, without stopping.
 * Off, an observation point costs one relaxed load and a branch the predictor learns.
 *
 * Writing. op_trace_stop (and, for OPERATIONS_TRACE, the process's normal exit) stops recording
 * and writes the file; op_trace_write writes without stopping. The writer copies every buffer
 * of the current trace (a buffer belongs to one trace: `trace` is its serial), sorts the events
 * by time and emits: a track per thread, named by the thread's name (the workers' say class
 * and CPU: op-uinit-c3); a slice per body, named by the operation's name (the Swift layer
 * records it: op_trace_name_task) or "task", with its queue, class, nice value, queue priority
 * and thread priority (the nice delta) in its arguments; flow arrows from a submit to the start
 * and from a dependency's finish to its dependent's start; instant events for cancellations,
 * promotions, carries, monitor rescues and spares; a counter track of unfinished tasks per queue.
 *
 * Threads and ordering:
 *   - op_trace_recording: relaxed everywhere (a switch; see observe.h).
 *   - A buffer's events are written by its thread alone, then `head` is advanced with a release
 *     store; the writer loads `head` with acquire and reads the events below it. In the flight
 *     recorder a slot may be overwritten while the writer copies it (the ring wrapped): the
 *     writer loads `head` again after copying and keeps only the events a later write could not
 *     have reached (a seqlock's check; that copy is excluded from ThreadSanitizer).
 *   - op_trace_buffers: a push-only list (compare-and-swap, release; the writer loads with
 *     acquire). Buffers are never unmapped (a thread may still be writing to its buffer of the
 *     previous trace when a new one starts); a new trace returns the old buffers' pages to the
 *     kernel (MADV_DONTNEED: the mapping stays valid, its pages read back as zeros).
 *   - Starting, stopping and writing hold op_trace_lock (never on a recording path); fork()
 *     holds it across (pthread_atfork, registered at the first start), and the child records
 *     nothing and never writes the parent's file.
 */
#include "observe.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define OP_TRACE_THREAD_EVENTS (1u << 20) /* whole-trace mode: 64 MB of address space a thread */
#define OP_TRACE_RING_MIN 4096u           /* flight recorder: at least this many events a thread */
#define OP_TRACE_TEXT 28

typedef struct op_trace_event {
    int64_t ts;         /* op_now_ns */
    uint64_t a, b;      /* ids: a task, a queue, a dependent (see observe.h) */
    uint16_t kind;      /* OP_EV_* */
    int8_t qos, nice, priority, delta;
    uint16_t unused;
    int32_t value;      /* unfinished tasks, a tid */
    char text[OP_TRACE_TEXT]; /* a label or a name, NUL-terminated, truncated */
} op_trace_event;
_Static_assert(sizeof(op_trace_event) == 64, "a trace event is one 64-byte line");

typedef struct op_trace_buffer {
    struct op_trace_buffer *next; /* op_trace_buffers, push-only */
    uint32_t trace;               /* the trace it belongs to (op_trace_serial then) */
    bool ring;                    /* flight recorder: wraps */
    int tid;
    char thread_name[32];
    uint64_t capacity;            /* events */
    alignas(OP_CACHE_LINE) _Atomic uint64_t head; /* events written; the thread's own */
    _Atomic uint64_t dropped;     /* whole-trace mode: events beyond capacity */
    op_trace_event *events;       /* the mapping */
} op_trace_buffer;

_Atomic bool op_trace_recording = false;
static _Atomic uint32_t op_trace_serial = 0;  /* bumped by each start (release; see there) */
static _Atomic uint64_t op_trace_ring_events = 0; /* 0: whole trace; else a ring's capacity */
static op_trace_buffer *_Atomic op_trace_buffers = NULL;
static _Thread_local op_trace_buffer *op_tls_trace_buffer;
static pthread_mutex_t op_trace_lock = PTHREAD_MUTEX_INITIALIZER;
static char *op_trace_path; /* under op_trace_lock */
static _Atomic bool op_trace_drop_reported = false;
/* Set in a fork's child: it records nothing and never writes the parent's file (at exit either). */
static bool op_trace_forked_child = false;
static pthread_once_t op_trace_fork_once = PTHREAD_ONCE_INIT;

/* fork(): the lock is held across it (no child inherits it held by a thread it does not
 * have); the child stops recording and will not write: the file is the parent's. */
static void op_trace_fork_prepare(void) { pthread_mutex_lock(&op_trace_lock); }
static void op_trace_fork_parent(void) { pthread_mutex_unlock(&op_trace_lock); }
static void op_trace_fork_child(void) {
    atomic_store_explicit(&op_trace_recording, false, memory_order_relaxed);
    op_trace_forked_child = true;
    pthread_mutex_unlock(&op_trace_lock);
}
static void op_trace_register_fork(void) {
    pthread_atfork(op_trace_fork_prepare, op_trace_fork_parent, op_trace_fork_child);
}

static op_trace_buffer *op_trace_buffer_new(uint32_t trace) {
    uint64_t ring = atomic_load_explicit(&op_trace_ring_events, memory_order_relaxed);
    uint64_t capacity = ring ? ring : OP_TRACE_THREAD_EVENTS;
    op_trace_buffer *buffer = calloc(1, sizeof *buffer);
    if (!buffer) return NULL;
    void *events = mmap(NULL, capacity * sizeof(op_trace_event), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (events == MAP_FAILED) {
        free(buffer);
        return NULL;
    }
    buffer->events = events;
    buffer->capacity = capacity;
    buffer->ring = ring != 0;
    buffer->trace = trace;
    buffer->tid = op_current_tid();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", buffer->tid);
    FILE *file = fopen(path, "re");
    if (file) {
        if (fgets(buffer->thread_name, sizeof buffer->thread_name, file)) {
            buffer->thread_name[strcspn(buffer->thread_name, "\n")] = '\0';
        }
        fclose(file);
    }
    /* release: the buffer's fields before a writer that loads the list (acquire) reads them. */
    op_trace_buffer *head = atomic_load_explicit(&op_trace_buffers, memory_order_relaxed);
    do {
        buffer->next = head;
    } while (!atomic_compare_exchange_weak_explicit(&op_trace_buffers, &head, buffer,
                                                    memory_order_release, memory_order_relaxed));
    return buffer;
}

void op_trace_record(int kind, const void *a, const void *b, int32_t value, int8_t qos,
                     int8_t nice, int8_t priority, int8_t delta, const char *text) {
    /* acquire: the new trace's mode (op_trace_ring_events), stored before its serial. */
    uint32_t trace = atomic_load_explicit(&op_trace_serial, memory_order_acquire);
    op_trace_buffer *buffer = op_tls_trace_buffer;
    if (OP_UNLIKELY(!buffer || buffer->trace != trace)) {
        buffer = op_trace_buffer_new(trace);
        if (!buffer) return; /* out of memory or address space: this thread records nothing */
        op_tls_trace_buffer = buffer;
    }
    uint64_t head = atomic_load_explicit(&buffer->head, memory_order_relaxed);
    if (!buffer->ring && head >= buffer->capacity) {
        op_count_own(&buffer->dropped, 1);
        return;
    }
    /* A ring overwrites its oldest slot: the previous release of `head` must be seen before
     * these stores (the writer's second look at `head` relies on it). Free on x86. */
    if (buffer->ring) atomic_thread_fence(memory_order_release);
    op_trace_event *event = &buffer->events[head % buffer->capacity];
    event->ts = op_now_ns();
    event->a = (uint64_t)(uintptr_t)a;
    event->b = (uint64_t)(uintptr_t)b;
    event->kind = (uint16_t)kind;
    event->qos = qos;
    event->nice = nice;
    event->priority = priority;
    event->delta = delta;
    event->value = value;
    if (text) {
        /* Truncated at a UTF-8 character's start, never inside one: the file must stay valid. */
        size_t length = strnlen(text, OP_TRACE_TEXT - 1);
        if (length == OP_TRACE_TEXT - 1 && text[length] != '\0') {
            while (length > 0 && ((unsigned char)text[length] & 0xC0) == 0x80) length--;
        }
        memcpy(event->text, text, length);
        event->text[length] = '\0';
    } else {
        event->text[0] = '\0';
    }
    /* release: the event before the writer, which loads head with acquire, reads it. */
    atomic_store_explicit(&buffer->head, head + 1, memory_order_release);
}

void op_trace_name_task(op_task_t *task, const char *name) {
    if (!task || !name || !op_tracing()) return;
    op_trace_record(OP_EV_NAME, task, NULL, 0, 0, 0, 0, 0, name);
}

bool op_trace_is_recording(void) { return op_tracing(); }

/* ---- the writer ----------------------------------------------------------------------------- */

typedef struct op_trace_copy {
    op_trace_event event;
    int tid;
    uint32_t order; /* position in its buffer: ties in time keep a thread's order */
} op_trace_copy;

typedef struct op_trace_copies {
    op_trace_copy *items;
    size_t count, capacity;
    uint64_t dropped;
} op_trace_copies;

static bool op_trace_copies_reserve(op_trace_copies *copies, size_t more) {
    if (copies->count + more <= copies->capacity) return true;
    size_t capacity = copies->capacity ? copies->capacity : 4096;
    while (capacity < copies->count + more) capacity *= 2;
    op_trace_copy *items = realloc(copies->items, capacity * sizeof *items);
    if (!items) return false;
    copies->items = items;
    copies->capacity = capacity;
    return true;
}

/* Copies a ring's events [first, last): another thread may be overwriting the oldest of them
 * (the caller keeps only those it could not have reached). Not seen by ThreadSanitizer: the
 * race is the design, checked by the caller's second load of `head`. Word by word through
 * volatile loads, not memcpy: a sanitizer intercepts memcpy even here. */
__attribute__((no_sanitize("thread"))) static void op_trace_copy_range(
    op_trace_copies *copies, const op_trace_buffer *buffer, uint64_t first, uint64_t last) {
    for (uint64_t i = first; i < last; i++) {
        op_trace_copy *copy = &copies->items[copies->count++];
        const volatile uint64_t *from = (const volatile uint64_t *)&buffer->events[i % buffer->capacity];
        uint64_t *to = (uint64_t *)&copy->event;
        for (size_t word = 0; word < sizeof copy->event / sizeof(uint64_t); word++) to[word] = from[word];
        copy->tid = buffer->tid;
        copy->order = (uint32_t)i;
    }
}

static bool op_trace_collect(op_trace_copies *copies, uint32_t trace) {
    for (op_trace_buffer *buffer = atomic_load_explicit(&op_trace_buffers, memory_order_acquire);
         buffer; buffer = buffer->next) {
        if (buffer->trace != trace) continue;
        /* acquire: the events below head are written. */
        uint64_t head = atomic_load_explicit(&buffer->head, memory_order_acquire);
        uint64_t first = head > buffer->capacity ? head - buffer->capacity : 0;
        if (!op_trace_copies_reserve(copies, head - first)) return false;
        size_t at = copies->count;
        op_trace_copy_range(copies, buffer, first, head);
        copies->dropped += op_count_read(&buffer->dropped);
        if (buffer->ring) {
            /* The writer was at `again` at most: slots of events below again - capacity + 1 may
             * have been overwritten while we copied. Keep the rest. */
            atomic_thread_fence(memory_order_acquire); /* the copies above before this look */
            uint64_t again = atomic_load_explicit(&buffer->head, memory_order_acquire);
            uint64_t valid = again >= buffer->capacity ? again - buffer->capacity + 1 : 0;
            if (valid > first) {
                size_t stale = (size_t)((valid < head ? valid : head) - first);
                memmove(&copies->items[at], &copies->items[at + stale],
                        (copies->count - at - stale) * sizeof *copies->items);
                copies->count -= stale;
            }
        }
    }
    return true;
}

static int op_trace_compare(const void *left, const void *right) {
    const op_trace_copy *l = left, *r = right;
    if (l->event.ts != r->event.ts) return l->event.ts < r->event.ts ? -1 : 1;
    if (l->tid != r->tid) return l->tid < r->tid ? -1 : 1;
    return l->order < r->order ? -1 : (l->order > r->order ? 1 : 0);
}

/* Open-addressing map from an id (a task's or queue's address) to its state in the writer (a
 * queue uses `name` for its label and `depth`). A task's address is reused once it is freed:
 * its state is reset at each submit. */
typedef struct op_trace_task_state {
    uint64_t id;
    char name[OP_TRACE_TEXT]; /* from the latest name event, else "" */
    bool named;               /* a name event came since its last finish */
    uint64_t submit_flow;     /* the flow from its submit to its start (0: none) */
    uint32_t edge_flows;      /* index+1 of its first pending dependency flow in the flow list */
    int64_t last_end;         /* its body's last end (ts) and thread: a dependency flow starts there */
    int last_tid;
    bool ended;
    int64_t depth;            /* a queue's: its unfinished tasks as of the writer's last event */
} op_trace_task_state;

typedef struct op_trace_map {
    op_trace_task_state *slots;
    size_t capacity; /* a power of two */
    size_t used;
} op_trace_map;

static size_t op_trace_map_slot(const op_trace_task_state *slots, size_t capacity, uint64_t id) {
    size_t i = (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 20) & (capacity - 1);
    while (slots[i].id && slots[i].id != id) i = (i + 1) & (capacity - 1);
    return i;
}

/* The state of `id`, made when new. The map grows only when an id is inserted, so a pointer
 * returned before stays valid across lookups of ids already in it (not across an insert). */
static op_trace_task_state *op_trace_map_get(op_trace_map *map, uint64_t id) {
    if (map->capacity) {
        size_t i = op_trace_map_slot(map->slots, map->capacity, id);
        if (map->slots[i].id == id) return &map->slots[i];
    }
    if ((map->used + 1) * 2 > map->capacity) {
        size_t capacity = map->capacity ? map->capacity * 2 : 1024;
        op_trace_task_state *slots = calloc(capacity, sizeof *slots);
        if (!slots) return NULL;
        for (size_t i = 0; i < map->capacity; i++) {
            if (map->slots[i].id) slots[op_trace_map_slot(slots, capacity, map->slots[i].id)] = map->slots[i];
        }
        free(map->slots);
        map->slots = slots;
        map->capacity = capacity;
    }
    size_t i = op_trace_map_slot(map->slots, map->capacity, id);
    map->slots[i].id = id;
    map->used++;
    return &map->slots[i];
}

/* Dependency flows waiting for their dependent's start: a list per task through `next`. */
typedef struct op_trace_flow {
    uint64_t id;
    uint32_t next; /* index+1, 0: end */
} op_trace_flow;

typedef struct op_trace_writer {
    FILE *file;
    int pid;
    bool first;
    op_trace_map tasks, queues;
    op_trace_flow *flows;
    size_t flow_count, flow_capacity;
    uint64_t next_flow;
} op_trace_writer;

static void op_trace_begin_event(op_trace_writer *w) {
    fputs(w->first ? "\n" : ",\n", w->file);
    w->first = false;
}

/* `text` as a JSON string; a byte that does not start a valid UTF-8 character (a thread name
 * the kernel cut at 15 bytes) becomes U+FFFD. */
static void op_trace_json_text(FILE *file, const char *text) {
    fputc('"', file);
    for (const unsigned char *c = (const unsigned char *)text; *c;) {
        if (*c == '"' || *c == '\\') {
            fprintf(file, "\\%c", *c++);
        } else if (*c < 0x20) {
            fprintf(file, "\\u%04x", *c++);
        } else if (*c < 0x80) {
            fputc(*c++, file);
        } else {
            size_t length = op_utf8_char_length(c);
            if (length == 0) {
                fputs("\\ufffd", file);
                c++;
            } else {
                fwrite(c, 1, length, file);
                c += length;
            }
        }
    }
    fputc('"', file);
}

static const char *op_trace_queue_label(op_trace_writer *w, uint64_t queue) {
    op_trace_task_state *state = queue ? op_trace_map_get(&w->queues, queue) : NULL;
    return state && state->named ? state->name : "";
}

/* A queue's counter track: by its label, or by its address when it has none (one track each). */
static void op_trace_counter_name(char *name, size_t size, const op_trace_task_state *queue,
                                  uint64_t id) {
    if (queue && queue->named) {
        snprintf(name, size, "unfinished: %s", queue->name);
    } else {
        snprintf(name, size, "unfinished: queue 0x%" PRIx64, id);
    }
}

static void op_trace_flow_point(op_trace_writer *w, const char *phase, const char *name,
                                uint64_t id, int64_t ts, int tid) {
    op_trace_begin_event(w);
    fprintf(w->file,
            "{\"ph\":\"%s\",%s\"cat\":\"flow\",\"name\":\"%s\",\"id\":%" PRIu64
            ",\"ts\":%.3f,\"pid\":%d,\"tid\":%d}",
            phase, phase[0] == 'f' ? "\"bp\":\"e\"," : "", name, id, (double)ts / 1000.0, w->pid,
            tid);
}

static void op_trace_instant(op_trace_writer *w, const op_trace_copy *copy, const char *name) {
    op_trace_begin_event(w);
    fprintf(w->file, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"runtime\",\"name\":\"%s\",\"ts\":%.3f,"
            "\"pid\":%d,\"tid\":%d,\"args\":{",
            name, (double)copy->event.ts / 1000.0, w->pid, copy->tid);
}

static void op_trace_emit(op_trace_writer *w, const op_trace_copy *copy) {
    const op_trace_event *e = &copy->event;
    double ts = (double)e->ts / 1000.0;
    op_trace_task_state *task = e->a ? op_trace_map_get(&w->tasks, e->a) : NULL;
    if (e->a && !task) return; /* out of memory: the event is left out */
    switch (e->kind) {
    case OP_EV_NAME:
        memcpy(task->name, e->text, sizeof task->name);
        task->named = true;
        break;
    case OP_EV_SUBMIT: {
        op_trace_task_state *queue = op_trace_map_get(&w->queues, e->b);
        if (queue) { /* every submit says the label (a queue's address may be reused) */
            memcpy(queue->name, e->text, sizeof queue->name);
            queue->named = e->text[0] != '\0';
        }
        if (queue) queue->depth = e->value; /* unfinished, this one included (counted before) */
        if (!task->named) task->name[0] = '\0';
        task->named = false; /* used at this submit; the next submit of the address needs its own */
        task->ended = false;
        /* (Its pending dependency flows stay: a dependency may finish before its dependent is
         * submitted. They are dropped at its finish.) */
        /* A short slice on the submitting thread carries the flow's start. */
        op_trace_begin_event(w);
        fprintf(w->file, "{\"ph\":\"X\",\"cat\":\"submit\",\"name\":\"submit\",\"ts\":%.3f,"
                "\"dur\":0.001,\"pid\":%d,\"tid\":%d,\"args\":{\"task\":\"0x%" PRIx64 "\"}}",
                ts, w->pid, copy->tid, e->a);
        task->submit_flow = ++w->next_flow;
        op_trace_flow_point(w, "s", "submit", task->submit_flow, e->ts, copy->tid);
        op_trace_begin_event(w);
        fputs("{\"ph\":\"C\",\"name\":", w->file);
        char counter[64];
        op_trace_counter_name(counter, sizeof counter, queue, e->b);
        op_trace_json_text(w->file, counter);
        fprintf(w->file, ",\"ts\":%.3f,\"pid\":%d,\"args\":{\"tasks\":%lld}}", ts, w->pid,
                queue ? (long long)queue->depth : (long long)e->value);
        break;
    }
    case OP_EV_START: {
        if (e->text[0]) { /* the queue's label, also here: a flight recorder may have lost the submit */
            op_trace_task_state *queue = op_trace_map_get(&w->queues, e->b);
            task = op_trace_map_get(&w->tasks, e->a); /* the insert may have moved the map */
            if (queue && !queue->named) {
                memcpy(queue->name, e->text, sizeof queue->name);
                queue->named = true;
            }
            if (!task) break;
        }
        op_trace_begin_event(w);
        fputs("{\"ph\":\"B\",\"cat\":\"operation\",\"name\":", w->file);
        op_trace_json_text(w->file, task->name[0] ? task->name : "task");
        fprintf(w->file, ",\"ts\":%.3f,\"pid\":%d,\"tid\":%d,\"args\":{\"task\":\"0x%" PRIx64
                "\",\"queue\":", ts, w->pid, copy->tid, e->a);
        op_trace_json_text(w->file, op_trace_queue_label(w, e->b));
        fprintf(w->file, ",\"qos\":\"%s\",\"nice\":%d,\"queue_priority\":%d,\"nice_delta\":%d}}",
                op_qos_name(e->qos), e->nice, e->priority - OP_PRIORITY_NORMAL, e->delta);
        if (task->submit_flow) {
            op_trace_flow_point(w, "f", "submit", task->submit_flow, e->ts, copy->tid);
            task->submit_flow = 0;
        }
        for (uint32_t at = task->edge_flows; at; at = w->flows[at - 1].next) {
            op_trace_flow_point(w, "f", "dependency", w->flows[at - 1].id, e->ts, copy->tid);
        }
        task->edge_flows = 0;
        break;
    }
    case OP_EV_END:
        op_trace_begin_event(w);
        fprintf(w->file, "{\"ph\":\"E\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d}", ts, w->pid, copy->tid);
        task->last_end = e->ts;
        task->last_tid = copy->tid;
        task->ended = true;
        break;
    case OP_EV_FINISH:
        task->edge_flows = 0; /* a cancelled task never starts: its flows end nowhere */
        if (e->qos) {
            op_trace_instant(w, copy, "cancelled");
            fprintf(w->file, "\"task\":\"0x%" PRIx64 "\"}}", e->a);
        }
        {
            /* The queue's unfinished count, kept here from its submits' (the finish may not touch
             * the queue: observe.h): one less, until the next submit says it exactly. */
            op_trace_task_state *queue = e->b ? op_trace_map_get(&w->queues, e->b) : NULL;
            if (!queue || queue->depth <= 0) break;
            queue->depth--;
            op_trace_begin_event(w);
            fputs("{\"ph\":\"C\",\"name\":", w->file);
            char counter[64];
            op_trace_counter_name(counter, sizeof counter, queue, e->b);
            op_trace_json_text(w->file, counter);
            fprintf(w->file, ",\"ts\":%.3f,\"pid\":%d,\"args\":{\"tasks\":%lld}}", ts, w->pid,
                    (long long)queue->depth);
        }
        break;
    case OP_EV_EDGE: {
        /* `task` was looked up above; the dependent may be new, and its insert may move the
         * map: take the dependency's fields first. */
        bool ended = task->ended;
        int64_t last_end = task->last_end;
        int last_tid = task->last_tid;
        op_trace_task_state *dependent = op_trace_map_get(&w->tasks, e->b);
        if (!dependent) break;
        if (w->flow_count == w->flow_capacity) {
            size_t capacity = w->flow_capacity ? w->flow_capacity * 2 : 1024;
            op_trace_flow *flows = realloc(w->flows, capacity * sizeof *flows);
            if (!flows) break;
            w->flows = flows;
            w->flow_capacity = capacity;
        }
        uint64_t id = ++w->next_flow;
        w->flows[w->flow_count] = (op_trace_flow){.id = id, .next = dependent->edge_flows};
        dependent->edge_flows = (uint32_t)++w->flow_count;
        /* From the end of the dependency's body (inside its slice), else from here. */
        bool in_body = ended && last_end <= e->ts;
        op_trace_flow_point(w, "s", "dependency", id, in_body ? last_end - 1 : e->ts,
                            in_body ? last_tid : copy->tid);
        break;
    }
    case OP_EV_CANCEL:
        op_trace_instant(w, copy, "cancel");
        fprintf(w->file, "\"task\":\"0x%" PRIx64 "\"}}", e->a);
        break;
    case OP_EV_PROMOTE:
        op_trace_instant(w, copy, "promote");
        fprintf(w->file, "\"task\":\"0x%" PRIx64 "\",\"queue\":", e->a);
        op_trace_json_text(w->file, op_trace_queue_label(w, e->b));
        fprintf(w->file, ",\"to\":\"%s\"}}", op_qos_name(e->qos));
        break;
    case OP_EV_CARRY:
        op_trace_instant(w, copy, "carry");
        fprintf(w->file, "\"task\":\"0x%" PRIx64 "\",\"queue\":", e->a);
        op_trace_json_text(w->file, op_trace_queue_label(w, e->b));
        fprintf(w->file, ",\"to_qos\":\"%s\",\"to_nice\":%d}}", op_qos_name(e->qos), e->nice);
        break;
    case OP_EV_RESCUE:
        op_trace_instant(w, copy, "rescue");
        fprintf(w->file, "\"blocked_tid\":%d}}", e->value);
        break;
    case OP_EV_SPARE:
        op_trace_instant(w, copy, "spare");
        fprintf(w->file, "\"qos\":\"%s\"}}", op_qos_name(e->qos));
        break;
    default:
        break;
    }
}

/* Writes the current trace's events to `path`. Under op_trace_lock. */
static int op_trace_write_locked(const char *path) {
    uint32_t trace = atomic_load_explicit(&op_trace_serial, memory_order_relaxed);
    op_trace_copies copies = {0};
    if (!op_trace_collect(&copies, trace)) {
        free(copies.items);
        return ENOMEM;
    }
    qsort(copies.items, copies.count, sizeof *copies.items, op_trace_compare);
    FILE *file = fopen(path, "we");
    if (!file) {
        int error = errno;
        free(copies.items);
        return error;
    }
    op_trace_writer w = {.file = file, .pid = getpid(), .first = true};
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", file);
    op_trace_begin_event(&w);
    fprintf(file, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%d,\"args\":{\"name\":\"operations\"}}",
            w.pid);
    for (op_trace_buffer *buffer = atomic_load_explicit(&op_trace_buffers, memory_order_acquire);
         buffer; buffer = buffer->next) {
        if (buffer->trace != trace) continue;
        op_trace_begin_event(&w);
        fprintf(file, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
                w.pid, buffer->tid);
        op_trace_json_text(file, buffer->thread_name[0] ? buffer->thread_name : "thread");
        fputs("}}", file);
    }
    for (size_t i = 0; i < copies.count; i++) op_trace_emit(&w, &copies.items[i]);
    fprintf(file, "\n],\"otherData\":{\"events\":%zu,\"dropped\":%" PRIu64 ",\"mode\":\"%s\"}}\n",
            copies.count, copies.dropped,
            atomic_load_explicit(&op_trace_ring_events, memory_order_relaxed) ? "flight recorder"
                                                                                : "whole trace");
    int rc = ferror(file) ? EIO : 0;
    if (fclose(file) != 0 && rc == 0) rc = errno;
    if (copies.dropped &&
        !atomic_exchange_explicit(&op_trace_drop_reported, true, memory_order_relaxed)) {
        fprintf(stderr,
                "operations: the trace dropped %" PRIu64 " events: a thread recorded more than %u "
                "(the trace in %s ends early on that thread). Use the flight recorder "
                "(OPERATIONS_TRACE_FLIGHT_MB, op_trace_start's flight_bytes) to keep the latest.\n",
                copies.dropped, OP_TRACE_THREAD_EVENTS, path);
    }
    free(copies.items);
    free(w.tasks.slots);
    free(w.queues.slots);
    free(w.flows);
    return rc;
}

/* Registered when the library loads, before an application's own handlers (whose prepare
 * handler may write a trace: it then runs before ours takes the lock; see pool_fork.c). */
__attribute__((constructor(101))) static void op_trace_register_fork_at_load(void) {
    pthread_once(&op_trace_fork_once, op_trace_register_fork);
}

int op_trace_start(const char *path, size_t flight_bytes) {
    if (!path || !*path) return EINVAL;
    pthread_once(&op_trace_fork_once, op_trace_register_fork);
    pthread_mutex_lock(&op_trace_lock);
    if (atomic_load_explicit(&op_trace_recording, memory_order_relaxed)) {
        pthread_mutex_unlock(&op_trace_lock);
        return EALREADY;
    }
    char *copy = strdup(path);
    if (!copy) {
        pthread_mutex_unlock(&op_trace_lock);
        return ENOMEM;
    }
    free(op_trace_path);
    op_trace_path = copy;
    op_trace_forked_child = false; /* a child's own trace, to its own path */
    /* The previous trace's buffers give their pages back (their mappings stay: a thread may
     * still be finishing an event in one). */
    for (op_trace_buffer *buffer = atomic_load_explicit(&op_trace_buffers, memory_order_acquire);
         buffer; buffer = buffer->next) {
        madvise(buffer->events, buffer->capacity * sizeof(op_trace_event), MADV_DONTNEED);
    }
    uint64_t ring = 0;
    if (flight_bytes) {
        uint64_t threads = 2 * (uint64_t)(op_topology_get()->cpu_count > 8 ? op_topology_get()->cpu_count : 8);
        ring = flight_bytes / sizeof(op_trace_event) / threads;
        if (ring < OP_TRACE_RING_MIN) ring = OP_TRACE_RING_MIN;
    }
    atomic_store_explicit(&op_trace_ring_events, ring, memory_order_relaxed);
    /* release: the mode above before a recorder that sees the new serial makes its buffer. */
    atomic_fetch_add_explicit(&op_trace_serial, 1, memory_order_release);
    atomic_store_explicit(&op_trace_recording, true, memory_order_relaxed);
    pthread_mutex_unlock(&op_trace_lock);
    return 0;
}

int op_trace_stop(void) {
    pthread_mutex_lock(&op_trace_lock);
    if (!atomic_load_explicit(&op_trace_recording, memory_order_relaxed)) {
        pthread_mutex_unlock(&op_trace_lock);
        return EALREADY;
    }
    atomic_store_explicit(&op_trace_recording, false, memory_order_relaxed);
    int rc = op_trace_write_locked(op_trace_path);
    pthread_mutex_unlock(&op_trace_lock);
    return rc;
}

int op_trace_write(const char *path) {
    pthread_mutex_lock(&op_trace_lock);
    /* A fork's child writes only where it is told: the start's path is the parent's file. */
    const char *to = path && *path ? path : (op_trace_forked_child ? NULL : op_trace_path);
    int rc = to ? op_trace_write_locked(to) : EINVAL;
    pthread_mutex_unlock(&op_trace_lock);
    return rc;
}

/* OPERATIONS_TRACE=<file>: records from the library's load and writes at the normal exit (not
 * a fork's child's: the file is the parent's). */
static void op_trace_at_exit(void) {
    if (!op_trace_forked_child && atomic_load_explicit(&op_trace_recording, memory_order_relaxed)) {
        (void)op_trace_stop();
    }
}

__attribute__((constructor)) static void op_trace_from_environment(void) {
    const char *path = getenv("OPERATIONS_TRACE");
    if (!path || !*path) return;
    int64_t megabytes = op_env_int("OPERATIONS_TRACE_FLIGHT_MB", 0, 0, INT64_C(1) << 20, "megabytes");
    int rc = op_trace_start(path, (size_t)megabytes << 20);
    if (rc != 0) {
        fprintf(stderr, "operations: OPERATIONS_TRACE=%s: cannot start the trace: %s\n", path,
                strerror(rc));
        return;
    }
    atexit(op_trace_at_exit);
}
