/* The waiting half of the stack sampler (collectors/stack_sampler.py), in C so that a sample whose
 * stack did not change costs the sampled thread almost nothing.
 *
 * Watcher(ident, native_id, period_s, late_s, max_backoff_s).wait(timeout_s) samples the thread
 * `ident` (threading.get_ident(); `native_id` is threading.get_native_id()) until its Python stack
 * changed, and returns the thread's stack then, or once timeout_s has passed since the call, as a
 * tuple of (code object, line) pairs, innermost first; None when the thread has no Python frame any
 * more (it ended). Never a frame: a frame object of a function the thread has left keeps its locals
 * alive, and a caller that held one while the thread ran on (its Python lets go of the GIL at any
 * time) kept tensors alive through the thread's torch_xla.sync(), which then compiled a new graph
 * with them as outputs. A sample:
 * - sleeps, with the GIL released, a jittered period (0.5 to 1.5 times the current one);
 * - reads the thread's CPU clock: a thread that did not run since the last sample has the same
 *   stack, and the sample ends there, without the GIL (a thread blocked in a read, a sync or a
 *   compile costs nothing more);
 * - else takes the GIL and compares the stack with the one it returned last, frame by frame (code
 *   object and line; a frame's line is computed only when its instruction moved).
 * Getting the GIL more than late_s after a pause means the GIL or a core was busy: the period then
 * doubles, up to max_backoff_s, until it comes promptly again. `samples` counts the samples,
 * `compared` those that took the GIL. `cpu_ns` is the thread's CPU time (ns, -1 where it cannot be
 * read) as of the last sample. `wanted_ns` is, as of the last sample that compared the stack (read
 * without the GIL), the time the thread was on a CPU or waiting for one (runnable: on a loaded host
 * Python that wants to run waits there), from its /proc schedstat (its CPU time where that cannot
 * be read): the caller tells the time the thread ran Python from the time it was blocked (in a
 * sleep, a queue, a read). `sampled_ns` is when (CLOCK_MONOTONIC, ns) the sample that returned last
 * was taken, with `wanted_ns`, before the wait for the GIL, where the thread kept the GIL through
 * most of that wait (it was on a CPU or runnable: a long C call such as gc.collect(), which lets go
 * of it only once it returns): it ran, from then on, the line of the stack read once the GIL came.
 * Where it did not (it waited for the GIL too), `sampled_ns` is when the stack was read, as the
 * line it waited at is known from then, and `wanted_ns` is read again then: a run's time and its
 * CPU time are always of the same two moments. The caller records the event later (once it has the
 * GIL and a core), and says by how much. After a return, `depth` is the stack's number of frames
 * and `kept` how many of its outermost frames (code and line) are those of the stack returned
 * before: the caller formats only the `depth - kept` innermost ones. `held_ns` is how long (ns, of
 * CLOCK_MONOTONIC) the calling thread has held the GIL from its first wait on, up to its latest
 * release of it: the time another thread that wanted to run Python waited for the sampler (its own
 * Python between two waits is counted too: it formats and records the stack with the GIL held).
 *
 * It reads frames only (public C API, the GIL held), never a tensor. Pure Python did the same per
 * sample with a sleep, sys._current_frames() and a walk in bytecode: tens of microseconds with the
 * GIL held, which a thread running Python paid at every sample.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <structmember.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

typedef struct { /* a stack, innermost frame first */
    PyObject **codes;  /* strong references */
    int *instructions; /* the frames' last instructions (moved on while their line stays) */
    int *lines;
    Py_ssize_t depth, capacity;
} Frames;

typedef struct {
    PyObject_HEAD
    unsigned long ident;
    long native_id;   /* the thread's id in the kernel (threading.get_native_id()) */
    long long cpu_ns; /* its CPU time when last read */
    long long wanted_ns; /* its time on a CPU or runnable, when last returned (see the header) */
    int sched_fd;        /* /proc/self/task/<native_id>/schedstat; 0 or less where not open */
    long long sampled_ns; /* CLOCK_MONOTONIC when the stack returned last was read */
    double period_s, late_s, max_backoff_s, sleep_s;
    uint64_t rng;
    unsigned long long samples, compared; /* samples taken so far, and those that took the GIL */
    Frames last, next;                    /* the stack returned last; room for the next one */
    Py_ssize_t depth, kept; /* of the stack returned last: frames, and outermost ones equal to the one before */
    double took_s;          /* when the calling thread last took the GIL (0 before its first wait) */
    long long held_ns;      /* the GIL held so far, up to its latest release */
} Watcher;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double uniform(Watcher *w) { /* xorshift64*: in [0, 1) */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return (double)((w->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static void sleep_for(double seconds) {
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}

static int last_instruction(PyFrameObject *frame) {
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLasti(frame);
#else
    return frame->f_lasti;
#endif
}

/* A thread state that a thread is starting carries its starter's ident until the new thread runs (it
 * is listed first, without a frame): a thread state of `ident` without a frame is skipped, so the
 * thread starting another is not taken for one that ended. */
static PyFrameObject *innermost_frame(unsigned long ident) { /* new reference, or NULL */
    PyInterpreterState *interpreter = PyThreadState_GetInterpreter(PyThreadState_Get());
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interpreter); t != NULL; t = PyThreadState_Next(t)) {
        if (t->thread_id == ident) {
            PyFrameObject *frame = PyThreadState_GetFrame(t);
            if (frame != NULL) {
                return frame;
            }
        }
    }
    return NULL;
}

/* Whether the stack is the one returned last, line by line: a frame at another instruction of the
 * same line is the same (its line is computed only when its instruction moved). */
static int same_stack(Frames *last, PyFrameObject *top) {
    Py_ssize_t i = 0;
    PyFrameObject *frame = top;
    Py_INCREF(frame);
    while (frame != NULL) {
        int same = 0;
        if (i < last->depth) {
            PyCodeObject *code = PyFrame_GetCode(frame);
            int instruction = last_instruction(frame);
            same = (PyObject *)code == last->codes[i] &&
                   (instruction == last->instructions[i] || PyFrame_GetLineNumber(frame) == last->lines[i]);
            if (same) {
                last->instructions[i] = instruction;
            }
            Py_DECREF(code);
        }
        PyFrameObject *back = same ? PyFrame_GetBack(frame) : NULL;
        Py_DECREF(frame);
        frame = back;
        if (!same) {
            return 0;
        }
        i++;
    }
    return i == last->depth;
}

static void clear(Frames *frames) {
    for (Py_ssize_t i = 0; i < frames->depth; i++) {
        Py_DECREF(frames->codes[i]);
    }
    frames->depth = 0;
}

static void release(Frames *frames) {
    clear(frames);
    PyMem_Free(frames->codes);
    PyMem_Free(frames->instructions);
    PyMem_Free(frames->lines);
}

static int grow(Frames *frames) {
    Py_ssize_t capacity = frames->capacity ? 2 * frames->capacity : 64;
    PyObject **codes = PyMem_Realloc(frames->codes, capacity * sizeof(PyObject *));
    if (codes != NULL) {
        frames->codes = codes;
    }
    int *instructions = codes ? PyMem_Realloc(frames->instructions, capacity * sizeof(int)) : NULL;
    if (instructions != NULL) {
        frames->instructions = instructions;
    }
    int *lines = instructions ? PyMem_Realloc(frames->lines, capacity * sizeof(int)) : NULL;
    if (lines == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    frames->lines = lines;
    frames->capacity = capacity;
    return 0;
}

static int read_frames(Frames *frames, PyFrameObject *top) {
    clear(frames);
    PyFrameObject *frame = top;
    Py_INCREF(frame);
    while (frame != NULL) {
        if (frames->depth == frames->capacity && grow(frames) < 0) {
            Py_DECREF(frame);
            return -1;
        }
        frames->codes[frames->depth] = (PyObject *)PyFrame_GetCode(frame);
        frames->instructions[frames->depth] = last_instruction(frame);
        frames->lines[frames->depth] = PyFrame_GetLineNumber(frame);
        frames->depth++;
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    return 0;
}

/* The stack `top` becomes the one returned last; `kept` counts its outermost frames (code and line)
 * equal to those of the one before. */
static int remember(Watcher *w, PyFrameObject *top) {
    if (read_frames(&w->next, top) < 0) {
        return -1;
    }
    Frames *old = &w->last, *new = &w->next;
    Py_ssize_t kept = 0;
    while (kept < old->depth && kept < new->depth &&
           old->codes[old->depth - 1 - kept] == new->codes[new->depth - 1 - kept] &&
           old->lines[old->depth - 1 - kept] == new->lines[new->depth - 1 - kept]) {
        kept++;
    }
    clear(old);
    Frames swap = *old;
    *old = *new;
    *new = swap;
    w->depth = old->depth;
    w->kept = kept;
    return 0;
}

/* Whether the thread ran since the last call said so: its CPU clock moved (or cannot be read, as
 * when it ended). A thread that did not run has the same stack, and needs no GIL to know it. The
 * clock is read before the stack is compared, so a change after the comparison shows next time. */
static long long thread_cpu_ns(Watcher *w) { /* -1 where it cannot be read */
    clockid_t clock = ((~(clockid_t)w->native_id) << 3) | 6; /* Linux: the thread's CPU clock (CPUCLOCK_SCHED) */
    struct timespec ts;
    return clock_gettime(clock, &ts) == 0 ? (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec : -1;
}

static int ran(Watcher *w) {
    long long cpu_ns = thread_cpu_ns(w);
    int moved = cpu_ns < 0 || cpu_ns != w->cpu_ns;
    w->cpu_ns = cpu_ns;
    return moved;
}

/* The time the thread was on a CPU or runnable: schedstat's first two fields (run and run-queue wait,
 * ns); its CPU time where schedstat cannot be read (-1 where neither can). */
static long long wanted_now(Watcher *w) {
    char text[96];
    ssize_t n = w->sched_fd > 0 ? pread(w->sched_fd, text, sizeof text - 1, 0) : -1;
    unsigned long long run_ns, wait_ns;
    if (n > 0) {
        text[n] = '\0';
        if (sscanf(text, "%llu %llu", &run_ns, &wait_ns) == 2) {
            return (long long)(run_ns + wait_ns);
        }
    }
    return thread_cpu_ns(w);
}

/* Whether the thread kept the GIL through most of a wait for it of `waited_s` that began with its
 * wanted time at `before_ns` and has it at `now_ns` (a long C call, such as gc.collect(), running all
 * along, or runnable where the host's cores were busy), rather than waiting for it too (asleep while
 * another thread held it). */
static int kept_the_gil(long long before_ns, long long now_ns, double waited_s) {
    return before_ns >= 0 && now_ns >= before_ns && (double)(now_ns - before_ns) * 1e-9 >= 0.5 * waited_s;
}

/* The stack as ((code, line), ...), innermost first. */
static PyObject *stack_tuple(const Frames *frames) {
    PyObject *result = PyTuple_New(frames->depth);
    for (Py_ssize_t i = 0; result != NULL && i < frames->depth; i++) {
        PyObject *pair = Py_BuildValue("(Oi)", frames->codes[i], frames->lines[i]);
        if (pair == NULL) {
            Py_CLEAR(result);
        } else {
            PyTuple_SET_ITEM(result, i, pair);
        }
    }
    return result;
}

static PyObject *watcher_wait(Watcher *w, PyObject *arg) {
    double timeout_s = PyFloat_AsDouble(arg);
    if (timeout_s == -1.0 && PyErr_Occurred()) {
        return NULL;
    }
    double deadline = now_s() + timeout_s;
    if (w->took_s == 0) { /* the first wait: the GIL counts from here */
        w->took_s = deadline - timeout_s;
    }
    for (;;) {
        double pause, asleep, woke, sampled;
        w->held_ns += (long long)((now_s() - w->took_s) * 1e9);
        Py_BEGIN_ALLOW_THREADS
        do {
            pause = w->sleep_s * (0.5 + uniform(w));
            asleep = now_s();
            sleep_for(pause);
            woke = now_s();
            w->samples++;
        } while (woke < deadline && !ran(w));
        w->wanted_ns = wanted_now(w); /* a syscall: before the GIL is taken, not while the sampled thread waits for it */
        sampled = now_s();
        Py_END_ALLOW_THREADS
        double came = w->took_s = now_s();
        w->compared++;
        w->sleep_s = came - asleep - pause > w->late_s ? Py_MIN(2 * w->sleep_s, w->max_backoff_s) : w->period_s;
        if (came - sampled > w->late_s) {
            long long now_ns = wanted_now(w);
            if (!kept_the_gil(w->wanted_ns, now_ns, came - sampled)) {
                /* it waited for the GIL too: at the stack read now, from when it is read, with the time
                 * it wanted a CPU until now (the event's CPU time and its span must be of one moment) */
                sampled = came;
                w->wanted_ns = now_ns;
            }
        }
        w->sampled_ns = (long long)(sampled * 1e9);
        PyFrameObject *top = innermost_frame(w->ident);
        if (top == NULL) {
            clear(&w->last);
            Py_RETURN_NONE;
        }
        if (!same_stack(&w->last, top)) {
            int failed = remember(w, top);
            Py_DECREF(top);
            return failed < 0 ? NULL : stack_tuple(&w->last);
        }
        Py_DECREF(top);
        if (woke >= deadline) { /* the same stack: every frame kept, nothing read again */
            w->kept = w->depth;
            return stack_tuple(&w->last);
        }
    }
}

static int watcher_init(Watcher *w, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"ident", "native_id", "period_s", "late_s", "max_backoff_s", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "klddd", keywords, &w->ident, &w->native_id, &w->period_s,
                                     &w->late_s, &w->max_backoff_s)) {
        return -1;
    }
    if (!(w->period_s > 0 && w->period_s <= w->max_backoff_s && w->late_s >= 0)) {
        PyErr_SetString(PyExc_ValueError, "need 0 < period_s <= max_backoff_s and late_s >= 0");
        return -1;
    }
    w->sleep_s = w->period_s;
    w->cpu_ns = w->wanted_ns = -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/schedstat", w->native_id);
    w->sched_fd = open(path, O_RDONLY | O_CLOEXEC);
    w->rng = ((uint64_t)w->ident ^ (uint64_t)(now_s() * 1e9)) | 1;
    clear(&w->last);
    return 0;
}

static void watcher_dealloc(Watcher *w) {
    if (w->sched_fd > 0) { /* 0: never opened (the object is zeroed before init; stdin is not ours) */
        close(w->sched_fd);
    }
    release(&w->last);
    release(&w->next);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static PyMethodDef watcher_methods[] = {
    {"wait", (PyCFunction)watcher_wait, METH_O,
     "wait(timeout_s): the thread's stack, ((code, line), ...) innermost first, once it changed or "
     "timeout_s passed; None when the thread has no frame any more."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef watcher_members[] = {
    {"samples", T_ULONGLONG, offsetof(Watcher, samples), READONLY, "samples taken so far"},
    {"compared", T_ULONGLONG, offsetof(Watcher, compared), READONLY, "samples that took the GIL to compare the stack"},
    {"cpu_ns", T_LONGLONG, offsetof(Watcher, cpu_ns), READONLY,
     "the thread's CPU time (ns) as of the last sample, -1 where it cannot be read"},
    {"wanted_ns", T_LONGLONG, offsetof(Watcher, wanted_ns), READONLY,
     "the thread's time on a CPU or runnable (ns) as of the last return, -1 where unknown"},
    {"sampled_ns", T_LONGLONG, offsetof(Watcher, sampled_ns), READONLY,
     "when (time.monotonic_ns()) the sample that returned last was taken, before the wait for the GIL: "
     "the caller's event may open later"},
    {"depth", T_PYSSIZET, offsetof(Watcher, depth), READONLY, "frames of the stack returned last"},
    {"held_ns", T_LONGLONG, offsetof(Watcher, held_ns), READONLY,
     "how long (ns) the calling thread held the GIL from its first wait up to its latest release of it"},
    {"kept", T_PYSSIZET, offsetof(Watcher, kept), READONLY,
     "outermost frames of the stack returned last equal (code and line) to those of the one before"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject WatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "collectors._stack_watch.Watcher",
    .tp_doc = "Waits, the GIL released, for a thread's Python stack to change.",
    .tp_basicsize = sizeof(Watcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)watcher_init,
    .tp_dealloc = (destructor)watcher_dealloc,
    .tp_methods = watcher_methods,
    .tp_members = watcher_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_stack_watch", "Waits for a thread's Python stack to change (the stack sampler's loop).", -1,
};

PyMODINIT_FUNC PyInit__stack_watch(void) {
    if (PyType_Ready(&WatcherType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "Watcher", (PyObject *)&WatcherType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
