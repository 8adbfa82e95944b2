/* The waiting half of the stack sampler (collectors/stack_sampler.py), in C so that a sample whose
 * stack did not change costs the sampled thread almost nothing.
 *
 * Watcher(ident, native_id, period_s, late_s, max_backoff_s).wait(timeout_s) samples the thread
 * `ident` (threading.get_ident(); `native_id` is threading.get_native_id()) until its Python stack
 * changed, and returns the thread's stack then, or once timeout_s has passed since the call, as a
 * tuple of (code object, line) pairs, innermost first (with wait(timeout_s, known), `known[key]`
 * where the stack's `key`, below, is in the dict `known`: a stack its caller formatted before costs
 * no pairs); None when the thread has no Python frame any more (it ended). Never a frame: a frame object of a function the thread has left keeps its locals
 * alive, and a caller that held one while the thread ran on (its Python lets go of the GIL at any
 * time) kept tensors alive through the thread's torch_xla.sync(), which then compiled a new graph
 * with them as outputs. A sample:
 * - sleeps, with the GIL released, a jittered period (0.5 to 1.5 times the current one);
 * - reads the thread's CPU clock: a thread that did not run since the last sample has the same
 *   stack, and the sample ends there, without the GIL (a thread blocked in a read, a sync or a
 *   compile costs nothing more);
 * - else takes the GIL and compares the stack with the one it returned last, frame by frame (code
 *   object and line; a frame's line is computed only when its instruction moved). Where the thread
 *   holds the GIL, it is first asked to let it go at its next check (collectors/_eval_break.c): a
 *   waiter's own request, after a whole switch interval with no hand-off, never came for a thread
 *   running Python between short calls that let go of the GIL, which was sampled at those calls.
 * Getting the GIL more than late_s after a pause means the GIL or a core was busy: the period then
 * doubles, up to max_backoff_s, until it comes promptly again. `samples` counts the samples,
 * `compared` those that took the GIL, `returned` the stacks wait() returned. `cpu_ns` is the
 * thread's CPU time (ns, -1 where it cannot be read) as of the last sample. `wanted_ns` is, as of
 * the last sample that compared the stack (read without the GIL), the time the thread was on a CPU
 * or waiting for one (runnable: on a loaded host Python that wants to run waits there), from its
 * /proc schedstat (its CPU time where that cannot be read): the caller tells the time the thread
 * ran Python from the time it was blocked (in a sleep, a queue, a read). `sampled_ns` is when
 * (CLOCK_MONOTONIC, ns) the sample that returned last was taken, with `wanted_ns`, before the wait
 * for the GIL, where the thread kept the GIL through most of that wait (it was on a CPU or
 * runnable: a long C call such as gc.collect(), which lets go of it only once it returns): it ran,
 * from then on, the line of the stack read once the GIL came. Where it did not (it waited for the
 * GIL too), `sampled_ns` is when the stack was read, as the line it waited at is known from then,
 * and `wanted_ns` is read again then: a run's time and its CPU time are always of the same two
 * moments. The caller records the event later (once it has the GIL and a core), and says by how
 * much. After a return, `depth` is the stack's number of frames and `kept` how many of its
 * outermost frames (code and line) are those of the stack returned before: the caller formats only
 * the `depth - kept` innermost ones, and `key` names the stack (bytes: each frame's code object,
 * its address, and line; the caller keeps the text of a stack it formatted under it, with its code
 * objects, so that no other code can take their addresses). `held_ns` is how long (ns, of
 * CLOCK_MONOTONIC) the calling thread has held the GIL from its first wait on, up to its latest
 * release of it: the time another thread that wanted to run Python waited for the sampler (its own
 * Python between two waits is counted too: it formats and records the stack with the GIL held).
 *
 * Watcher(..., trips=True) watches the main thread (`ident` must be it) another way, as a thread
 * waiting for the GIL is starved by one that runs Python between short calls letting go of it (a
 * tokenizer's, a torch op's): each release starts the waiter's switch interval over, and such a
 * waiter sampled only those calls. A thread of its own, `xlaprof-trip`, which never takes the GIL
 * and runs as SCHED_BATCH (its wake-ups wait for a busy core's slice to end instead of preempting
 * the thread on it: fewer samples on a busy core, not a stalled main thread), sleeps the jittered
 * period (backing off while its wake-ups come late) and, where its last ask was answered, asks the
 * main thread for a pending call (Py_AddPendingCall, with its interpreter told to look:
 * collectors/_eval_break.c), and asks nothing more until the call ran (parked once it is left
 * pending by a thread that has not run since it last looked, as in a long read, or for PARK_PERIODS
 * periods: see trip_loop; `pending_wakes` counts its wake-ups that found the ask pending). The
 * thread runs the call at its next check for pending work (a call's return, a loop's jump), so at
 * the stack it had when asked: at once where it runs Python, on its return where it was in a C call
 * or blocked (a sleep, a read, a wait for the GIL). The call compares that stack with the last one,
 * in C, with no hand-off of the GIL, and records it where it changed, stamped at the ask. The
 * samples wait in a ring of RING until wait() returns them, one a call, oldest first (with `depth`,
 * `kept`, `sampled_ns` and `wanted_ns` of each). A call that ran more than IN_CALL_NS after its ask
 * found the thread in a call of its stack (a C call, a block) from the ask on, and the time from
 * the ask to the call the thread was neither on a CPU nor runnable it was blocked there:
 * `seen_blocked_ns` is the Watcher's total of those times, each added after the sample read with
 * it, so that its growth from a sample to the next is the time the first one's run was seen blocked
 * in its calls (the analysis tells by it a line that blocks from one the thread was off the CPUs
 * at, unseen; a thread kept from its core on a busy host answers late too, runnable). At timeout_s
 * a wait reads the stack itself: where a call is still pending, the stack has not moved since the
 * ask (the call would have run first), and a change is stamped then; an unchanged stack is returned
 * again, stamped when read. A sample dropped as the ring was full leaves the next one with no kept
 * frame. interrupt() ends its current wait at once, as at its timeout (flush() in
 * collectors/stack_sampler.py: its caller waits long, the samples queue meanwhile). close() stops
 * the tripping thread (a wait starts it again); one Watcher at a time trips the main thread
 * (another one's wait raises RuntimeError until it is closed). The interpreter's flag is set only
 * while the main thread holds the GIL: the process's other Python threads, running while it is in a
 * long C call, do not find it set for nothing.
 *
 * stack_key(frame) is the identity of `frame`'s stack as bytes: each frame's code object (its
 * address) and last instruction, innermost first. Equal keys are the same stack, line for line, while
 * their code objects live (a frame's line follows from its code and instruction); the read marks
 * (collectors/read_calls.py) keep their stacks' formatted text under it, with the codes.
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
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* collectors/_eval_break.c */
void break_eval(PyInterpreterState *interpreter, PyThreadState *main_thread);
void ask_for_the_gil(PyInterpreterState *interpreter, PyThreadState *thread);

typedef struct { /* a stack, innermost frame first */
    PyObject **codes;  /* strong references */
    int *instructions; /* the frames' last instructions (moved on while their line stays) */
    int *lines;
    Py_ssize_t depth, capacity;
} Frames;

typedef struct { /* a frame in a stack's key: its code object's address, and its instruction
                 * (stack_key) or line (Watcher.key) */
    void *code;
    long long at;
} KeyFrame;

typedef struct { /* when a sample was taken, and the thread's wanted time then (see the header) */
    long long sampled_ns, wanted_ns;
} Stamp;

typedef struct { /* a stack a trip recorded, until the caller takes it */
    Frames frames;
    Py_ssize_t kept;
    Stamp stamp;
    long long seen_blocked_ns; /* the Watcher's seen-blocked total when recorded */
} Sample;

#define RING 256 /* samples a trip records before the caller takes them (a caller kept off the GIL) */
/* An ask answered later than this found the thread in a call (a C call, a block) or kept from its
 * core: one running Python answers within microseconds (30 at most, 1 at the median, on a quiet host) */
#define IN_CALL_NS 100000LL
#define PARK_PERIODS 2 /* an ask pending this many periods parks the tripping thread until answered */

typedef struct Watcher Watcher;

/* The tripping thread of a Watcher of the main thread (see the header). */
typedef struct {
    Watcher *watcher;
    pthread_t thread;
    int started, stop;  /* started: the pid that started the thread (0: none); stop: atomic */
    int asked;          /* atomic: a pending call was asked for and has not run yet */
    long long asked_ns, asked_wanted_ns; /* when the call was asked for, and the wanted time then */
    long long seen_cpu_ns;    /* the thread's CPU time at the ask, then at each wake-up it is pending */
    double sleep_s;
    uint64_t rng;
    pthread_mutex_t lock; /* with `wake`: the caller waits, the GIL released, for `woken` or a timeout */
    pthread_cond_t wake;
    int woken;
    int interrupted;         /* atomic: interrupt() ends the current (or next) wait at once */
    pthread_cond_t answered; /* with `lock`: the tripping thread parks here while `parked` (atomic) */
    int parked;
    Sample ring[RING];       /* the samples trips recorded, oldest at `head` (the GIL held) */
    int head, count, overflowed; /* overflowed: a sample was dropped, the next one keeps no frame */
} Tripper;

struct Watcher {
    PyObject_HEAD
    PyInterpreterState *interpreter;
    PyThreadState *thread_state; /* the thread's (NULL: not found); compared, never read */
    unsigned long ident;
    long native_id;   /* the thread's id in the kernel (threading.get_native_id()) */
    long long cpu_ns; /* its CPU time when last read */
    long long wanted_ns; /* its time on a CPU or runnable, when last returned (see the header) */
    int sched_fd;        /* /proc/self/task/<native_id>/schedstat; 0 or less where not open */
    long long sampled_ns; /* CLOCK_MONOTONIC when the stack returned last was read */
    double period_s, late_s, max_backoff_s, sleep_s;
    uint64_t rng;
    unsigned long long samples, compared; /* samples taken so far, and those that took the GIL */
    unsigned long long returned;          /* stacks wait() returned */
    unsigned long long pending_wakes; /* wake-ups of the tripping thread that found its ask pending */
    Frames last, next;                    /* the stack returned last; room for the next one */
    Py_ssize_t depth, kept; /* of the stack returned last: frames, and outermost ones equal to the one before */
    double took_s;          /* when the calling thread last took the GIL (0 before its first wait) */
    long long held_ns;      /* the GIL held so far, up to its latest release */
    long long seen_blocked_ns, seen_blocked_total_ns; /* as of the sample returned last, and so far */
    Tripper *tripper;       /* a Watcher of the main thread: asks it to sample itself (NULL: not) */
    PyObject *key;          /* the key of the stack returned last (bytes; NULL before the first) */
    PyObject *known;        /* the current wait's mapping of keys to what it returns for them (borrowed; or NULL) */
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double uniform(uint64_t *rng) { /* xorshift64*: in [0, 1) */
    *rng ^= *rng >> 12;
    *rng ^= *rng << 25;
    *rng ^= *rng >> 27;
    return (double)((*rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
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
static PyThreadState *thread_state_of(PyInterpreterState *interpreter, unsigned long ident) { /* or NULL */
    for (PyThreadState *t = PyInterpreterState_ThreadHead(interpreter); t != NULL; t = PyThreadState_Next(t)) {
        PyFrameObject *frame = t->thread_id == ident ? PyThreadState_GetFrame(t) : NULL;
        if (frame != NULL) {
            Py_DECREF(frame);
            return t;
        }
    }
    return NULL;
}

static PyFrameObject *innermost_frame(unsigned long ident) { /* new reference, or NULL */
    PyThreadState *t = thread_state_of(PyThreadState_GetInterpreter(PyThreadState_Get()), ident);
    return t != NULL ? PyThreadState_GetFrame(t) : NULL;
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

/* The stack `top` becomes the last one; returns how many of its outermost frames (code and line) are
 * those of the one before (-1: out of memory). */
static Py_ssize_t remember(Watcher *w, PyFrameObject *top) {
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
    return kept;
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
    if (n > 0) { /* "run_ns wait_ns slices\n", parsed without sscanf (6% of the loop's own time) */
        text[n] = '\0';
        char *end_run, *end_wait;
        unsigned long long run_ns = strtoull(text, &end_run, 10);
        unsigned long long wait_ns = end_run > text ? strtoull(end_run, &end_wait, 10) : 0;
        if (end_run > text && end_wait > end_run) {
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

/* A stack's key of `depth` frames, each to be set by set_key_frame (NULL with an exception set). */
static PyObject *new_key(Py_ssize_t depth) {
    return PyBytes_FromStringAndSize(NULL, depth * (Py_ssize_t)sizeof(KeyFrame));
}

static void set_key_frame(PyObject *key, Py_ssize_t i, void *code, long long at) {
    KeyFrame frame = {code, at};
    memcpy(PyBytes_AS_STRING(key) + i * (Py_ssize_t)sizeof(KeyFrame), &frame, sizeof frame);
}

/* The stack `frames` as wait() returns it, its key in `w->key` (the GIL held): the current wait's
 * `known[key]` where the key is there (no pairs built for a stack the caller formatted before). */
static PyObject *returned(Watcher *w, const Frames *frames) {
    PyObject *key = new_key(frames->depth);
    if (key == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < frames->depth; i++) {
        set_key_frame(key, i, frames->codes[i], frames->lines[i]);
    }
    Py_XSETREF(w->key, key);
    if (w->known != NULL) {
        PyObject *value = PyDict_GetItemWithError(w->known, key); /* borrowed */
        if (value != NULL) {
            return Py_NewRef(value);
        }
        if (PyErr_Occurred()) {
            return NULL;
        }
    }
    return stack_tuple(frames);
}

/* The wait of a Watcher that samples its thread itself, taking the GIL (see the header). */
static PyObject *watch_wait(Watcher *w, double timeout_s) {
    double deadline = now_s() + timeout_s;
    if (w->took_s == 0) { /* the first wait: the GIL counts from here */
        w->took_s = deadline - timeout_s;
    }
    for (;;) {
        double pause, asleep, woke, sampled;
        w->held_ns += (long long)((now_s() - w->took_s) * 1e9);
        Py_BEGIN_ALLOW_THREADS
        do {
            pause = w->sleep_s * (0.5 + uniform(&w->rng));
            asleep = now_s();
            sleep_for(pause);
            woke = now_s();
            w->samples++;
        } while (woke < deadline && !ran(w));
        w->wanted_ns = wanted_now(w); /* a syscall: before the GIL is taken, not while the sampled thread waits for it */
        sampled = now_s();
        ask_for_the_gil(w->interpreter, w->thread_state); /* it lets go at its next check, not at its next call */
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
            Py_ssize_t kept = remember(w, top);
            Py_DECREF(top);
            if (kept < 0) {
                return NULL;
            }
            w->depth = w->last.depth;
            w->kept = kept;
            return returned(w, &w->last);
        }
        Py_DECREF(top);
        if (woke >= deadline) { /* the same stack: every frame kept, nothing read again */
            w->kept = w->depth;
            return returned(w, &w->last);
        }
    }
}

/* Tripping (a Watcher of the main thread): the thread samples itself, in a pending call. */

static long long now_ns(void) {
    return (long long)(now_s() * 1e9);
}

/* Signals `cond` (of `t->lock`) once `lock` is let go: a waiter signalled while it is held wakes only
 * to wait for it, and its second wake-up, at the unlock, took the signalling thread's core (the main
 * thread's, in trip()). The caller set what the waiter checks first; taking `lock` means the waiter,
 * which checks it under `lock`, either saw it or waits. */
static void signal_unlocked(Tripper *t, pthread_cond_t *cond) {
    pthread_mutex_unlock(&t->lock);
    pthread_cond_signal(cond);
}

static void wake(Tripper *t) {
    pthread_mutex_lock(&t->lock);
    t->woken = 1;
    signal_unlocked(t, &t->wake);
}

/* Waits (the tripping thread) until trip() ran or stop_tripping() began. `parked` is set before the
 * ask is read again, and trip() clears the ask before it reads `parked` (both sequentially
 * consistent): either this sees the ask answered, or trip() sees `parked`, takes `lock`, which it can
 * only once this waits, and signals. */
static void park(Tripper *t) {
    pthread_mutex_lock(&t->lock);
    __atomic_store_n(&t->parked, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&t->asked, __ATOMIC_SEQ_CST) && !__atomic_load_n(&t->stop, __ATOMIC_SEQ_CST)) {
        pthread_cond_wait(&t->answered, &t->lock);
    }
    __atomic_store_n(&t->parked, 0, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&t->lock);
}

static void free_tripper(Tripper *t) { /* the GIL held */
    for (int i = 0; i < RING; i++) {
        release(&t->ring[i].frames);
    }
    pthread_mutex_destroy(&t->lock);
    pthread_cond_destroy(&t->wake);
    pthread_cond_destroy(&t->answered);
    PyMem_RawFree(t);
}

/* The stack `last` as the newest sample of the ring (the GIL held), sampled at `sampled_ns`. */
static int push(Watcher *w, Py_ssize_t kept, Stamp stamp) {
    Tripper *t = w->tripper;
    if (t->count == RING) { /* the caller has not taken them for long: the newest is dropped */
        t->overflowed = 1;
        return 0;
    }
    Sample *sample = &t->ring[(t->head + t->count) % RING];
    Frames *frames = &sample->frames;
    clear(frames);
    while (frames->capacity < w->last.depth) {
        if (grow(frames) < 0) {
            return -1;
        }
    }
    for (Py_ssize_t i = 0; i < w->last.depth; i++) {
        frames->codes[i] = Py_NewRef(w->last.codes[i]);
        frames->instructions[i] = w->last.instructions[i];
        frames->lines[i] = w->last.lines[i];
    }
    frames->depth = w->last.depth;
    sample->kept = t->overflowed ? 0 : kept; /* after a dropped one, its reader formats it whole */
    t->overflowed = 0;
    sample->stamp = stamp;
    sample->seen_blocked_ns = w->seen_blocked_total_ns;
    t->count++;
    return 0;
}

/* The thread's stack `top` as of `stamp` (the GIL held): a new sample where it changed. */
static int record(Watcher *w, PyFrameObject *top, Stamp stamp) {
    w->compared++;
    if (w->last.depth > 0 && same_stack(&w->last, top)) {
        return 0;
    }
    Py_ssize_t kept = remember(w, top);
    if (kept < 0 || push(w, kept, stamp) < 0) {
        return -1;
    }
    if (w->tripper->count >= RING / 2) { /* the caller takes them before the ring fills */
        wake(w->tripper);
    }
    return 0;
}

/* The oldest sample of the ring, as wait() returns it (the GIL held). */
static PyObject *pop(Watcher *w) {
    Tripper *t = w->tripper;
    Sample *sample = &t->ring[t->head];
    PyObject *stack = returned(w, &sample->frames);
    if (stack == NULL) {
        return NULL;
    }
    w->depth = sample->frames.depth;
    w->kept = sample->kept;
    w->sampled_ns = sample->stamp.sampled_ns;
    w->wanted_ns = sample->stamp.wanted_ns;
    w->seen_blocked_ns = sample->seen_blocked_ns;
    clear(&sample->frames);
    t->head = (t->head + 1) % RING;
    t->count--;
    return stack;
}

static Tripper *tripping; /* the Tripper whose asks trip() answers (changed with the GIL held) */

/* How long the thread, answering now the ask `t` made, was blocked in a call of its stack since: its
 * time off the CPUs and not runnable (0 where it answered within IN_CALL_NS: it ran Python; a
 * schedstat read, the caller's, only for a late answer). */
static long long blocked_since_ask(Tripper *t) {
    long long elapsed = now_ns() - t->asked_ns;
    if (elapsed < IN_CALL_NS || t->asked_wanted_ns < 0) {
        return 0;
    }
    long long wanted_ns = wanted_now(t->watcher);
    return wanted_ns < 0 ? 0 : Py_MAX(elapsed - (wanted_ns - t->asked_wanted_ns), 0);
}

/* The pending call a trip asks for: run by the main thread, the GIL held, as its interpreter next
 * checks for pending work (at a call's return, a loop's jump), so at the stack it had when asked. It
 * records that stack as of the ask, where it changed, and never raises: a sample it cannot record is
 * skipped. */
static int trip(void *unused) {
    Tripper *t = tripping;
    if (t == NULL || !__atomic_load_n(&t->asked, __ATOMIC_ACQUIRE)) { /* the Watcher went away meanwhile */
        return 0;
    }
    Watcher *w = t->watcher;
    long long seen_blocked_ns = blocked_since_ask(t);
    Stamp stamp = {t->asked_ns, t->asked_wanted_ns};
    __atomic_store_n(&t->asked, 0, __ATOMIC_SEQ_CST); /* back in Python: asked again at the next wake */
    /* seen, or park() sees the ask answered; not in a child forked meanwhile, where no thread parks
     * and the lock may have been copied held */
    if (__atomic_load_n(&t->parked, __ATOMIC_SEQ_CST) && t->started == getpid()) {
        pthread_mutex_lock(&t->lock);
        signal_unlocked(t, &t->answered);
    }
    PyThreadState *self = PyThreadState_Get();
    PyFrameObject *top = self->thread_id == w->ident ? PyThreadState_GetFrame(self) : NULL;
    if (top != NULL) { /* recorded with the total before this call's: that time is its run's */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        if (record(w, top, stamp) < 0) {
            PyErr_Clear();
        }
        PyErr_Restore(type, value, traceback);
        Py_DECREF(top);
    }
    w->seen_blocked_total_ns += seen_blocked_ns;
    return 0;
}

/* Whether the interpreter is being torn down (the sampler stops its emitters at exit before that:
 * collectors/stack_sampler.py; this is for a process whose emitters did not end in time). */
static int finalizing(void) {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing();
#else
    return _Py_IsFinalizing();
#endif
}

/* Whether the thread has not run since the tripping thread last looked (its CPU clock stayed): blocked
 * (a read, a sync, a sleep), it answers the pending ask only once back in Python, so the tripping thread
 * parks at once rather than after PARK_PERIODS wake-ups (a thread still on a CPU is in a C call, which
 * most often returns within them). */
static int blocked_since_seen(Tripper *t) {
    long long cpu_ns = thread_cpu_ns(t->watcher), seen_ns = t->seen_cpu_ns;
    t->seen_cpu_ns = cpu_ns;
    return cpu_ns >= 0 && cpu_ns == seen_ns;
}

/* The tripping thread (never takes the GIL): sleeps a jittered period (backing off while its wake-ups
 * come late), and where its last ask was answered, asks the thread for trip() (a pending call), whether
 * it ran since or not. A thread running Python answers at once, with no wake-up of this thread. One in
 * a C call or blocked (a sleep, a read, a wait for the GIL) runs the call once back in Python, at the
 * line it was on, and its stack does not move meanwhile (the caller's wait reads it at its timeout, as
 * of the ask): an ask left pending parks this thread until trip() ran, which then wakes it, at the
 * first wake-up that finds the thread has not run since the last look (blocked: one wake-up a block)
 * or once the ask is PARK_PERIODS periods old (a long C call). So the thread's long reads and syncs
 * cost no wake-up a period (the CPU device computes on those cores meanwhile), and its Python after
 * them is sampled a period on; a thread answering every ask within a period is never woken by its
 * call (a cross-core wake-up per sample cost it 1% of its time at 1 kHz in a virtual machine). */
static void *trip_loop(void *arg) {
    Tripper *t = arg;
    Watcher *w = t->watcher; /* outlives this thread: it is joined first */
    prctl(PR_SET_NAME, "xlaprof-trip", 0, 0, 0);
    /* SCHED_BATCH: its wake-ups do not preempt the thread running on a core (the main thread, the
     * device's), which then waited on the run queue (on the 2-core CPU device, 1.4-1.8 preemptions of
     * the main thread a demo step, against 0.2-0.4); it keeps its fair share of a busy core, later. */
    struct sched_param batch = {.sched_priority = 0};
    sched_setscheduler(0, SCHED_BATCH, &batch); /* where it is refused, the default policy */
    while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE) && !finalizing()) {
        double pause = t->sleep_s * (0.5 + uniform(&t->rng)), asleep = now_s();
        sleep_for(pause);
        double woke = now_s();
        /* Only a busy core backs off: a call answered late came back from a C call, whose Python
         * after is sampled at once (a back-off there lost a whole forward after each sync). */
        t->sleep_s = woke - asleep - pause > w->late_s ? Py_MIN(2 * t->sleep_s, w->max_backoff_s) : w->period_s;
        if (__atomic_load_n(&t->asked, __ATOMIC_ACQUIRE)) { /* not answered yet: the stack of the ask */
            __atomic_add_fetch(&w->pending_wakes, 1, __ATOMIC_RELAXED);
            if (blocked_since_seen(t) || (double)(now_ns() - t->asked_ns) * 1e-9 >= PARK_PERIODS * w->period_s) {
                park(t);
            }
            continue;
        }
        __atomic_add_fetch(&w->samples, 1, __ATOMIC_RELAXED);
        ran(w); /* its CPU time, as of the ask */
        t->seen_cpu_ns = w->cpu_ns;
        t->asked_wanted_ns = wanted_now(w);
        t->asked_ns = now_ns();
        __atomic_store_n(&t->asked, 1, __ATOMIC_SEQ_CST);
        if (Py_AddPendingCall(trip, NULL) < 0) { /* the interpreter's queue is full: next time */
            __atomic_store_n(&t->asked, 0, __ATOMIC_SEQ_CST);
            continue;
        }
        break_eval(w->interpreter, w->thread_state);
    }
    return NULL;
}

static int start_tripping(Tripper *t) {
    if (tripping != NULL && tripping != t) {
        PyErr_SetString(PyExc_RuntimeError, "another Watcher trips the main thread");
        return -1;
    }
    tripping = t;
    t->stop = 0;
    t->sleep_s = t->watcher->period_s;
    int failed = pthread_create(&t->thread, NULL, trip_loop, t);
    if (failed) {
        errno = failed;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    t->started = getpid();
    return 0;
}

static void stop_tripping(Tripper *t) {
    if (t->started == getpid()) { /* not in a child forked meanwhile: the thread is not there */
        pthread_mutex_lock(&t->lock); /* it ends within a period, or at once where parked */
        __atomic_store_n(&t->stop, 1, __ATOMIC_SEQ_CST);
        pthread_cond_signal(&t->answered);
        pthread_mutex_unlock(&t->lock);
        Py_BEGIN_ALLOW_THREADS
        pthread_join(t->thread, NULL);
        Py_END_ALLOW_THREADS
    }
    t->started = 0;
    if (tripping == t) {
        tripping = NULL;
    }
}

/* Reads the thread's stack here (the GIL held), as of `stamp`; 1 where it has no frame (ended). */
static int sample_here(Watcher *w, Stamp stamp) {
    PyFrameObject *top = innermost_frame(w->ident);
    if (top == NULL) {
        return 1;
    }
    int failed = record(w, top, stamp);
    Py_DECREF(top);
    return failed;
}

/* The wait of a tripping Watcher: it returns the samples its trips recorded, one a call, oldest
 * first; reads the stack itself where an ask stays pending (a thread in a C call or blocked: the
 * stack it had when asked) and at the timeout (the same stack returned again, as by watch_wait). */
static PyObject *trip_wait(Watcher *w, double timeout_s) {
    Tripper *t = w->tripper;
    double deadline = now_s() + timeout_s;
    if (w->took_s == 0) {
        w->took_s = deadline - timeout_s;
    }
    if (!t->started && start_tripping(t) < 0) {
        return NULL;
    }
    long long wanted_ns = -1;
    for (;;) {
        if (t->count > 0) {
            return pop(w);
        }
        /* an interrupted wait reads the stack at once (the interrupt taken: it ends this wait only), as
         * the first one does */
        if (__atomic_exchange_n(&t->interrupted, 0, __ATOMIC_ACQ_REL) || now_s() >= deadline || w->last.depth == 0) {
            long long read_ns = now_ns();
            if (wanted_ns < 0) {
                wanted_ns = wanted_now(w);
            }
            Stamp changed = {read_ns, wanted_ns};
            if (__atomic_load_n(&t->asked, __ATOMIC_ACQUIRE)) {
                /* its call has not run (it cannot while the GIL is held here): a stack that changed did
                 * so before the ask (the call counts the time in a call when it runs) */
                changed = (Stamp){t->asked_ns, t->asked_wanted_ns};
            }
            int ended = sample_here(w, changed);
            if (ended < 0) {
                return NULL;
            }
            if (ended) {
                clear(&w->last);
                Py_RETURN_NONE;
            }
            if (t->count > 0) {
                return pop(w);
            }
            w->depth = w->kept = w->last.depth; /* the same stack: every frame kept, nothing read again */
            w->sampled_ns = read_ns;
            w->wanted_ns = wanted_ns;
            w->seen_blocked_ns = w->seen_blocked_total_ns;
            return returned(w, &w->last);
        }
        w->held_ns += (long long)((now_s() - w->took_s) * 1e9);
        Py_BEGIN_ALLOW_THREADS
        pthread_mutex_lock(&t->lock);
        double left = deadline - now_s();
        if (!t->woken && !__atomic_load_n(&t->interrupted, __ATOMIC_ACQUIRE) && left > 0) {
            struct timespec until;
            clock_gettime(CLOCK_MONOTONIC, &until);
            long long ns = until.tv_nsec + (long long)(left * 1e9);
            until.tv_sec += ns / 1000000000LL;
            until.tv_nsec = ns % 1000000000LL;
            pthread_cond_timedwait(&t->wake, &t->lock, &until);
        }
        t->woken = 0;
        pthread_mutex_unlock(&t->lock);
        wanted_ns = wanted_now(w); /* for a read at the timeout: before the GIL is taken */
        Py_END_ALLOW_THREADS
        w->took_s = now_s();
    }
}

static PyObject *watcher_wait(Watcher *w, PyObject *args) {
    double timeout_s;
    PyObject *known = Py_None;
    if (!PyArg_ParseTuple(args, "d|O:wait", &timeout_s, &known)) {
        return NULL;
    }
    if (known != Py_None && !PyDict_Check(known)) {
        PyErr_SetString(PyExc_TypeError, "wait(timeout_s, known): known must be a dict or None");
        return NULL;
    }
    w->known = known == Py_None ? NULL : known; /* the caller's argument: alive through the call */
    PyObject *stack = w->tripper != NULL ? trip_wait(w, timeout_s) : watch_wait(w, timeout_s);
    w->known = NULL;
    if (stack != NULL && stack != Py_None) {
        w->returned++;
    }
    return stack;
}

static PyObject *watcher_close(Watcher *w, PyObject *Py_UNUSED(ignored)) {
    if (w->tripper != NULL) {
        stop_tripping(w->tripper);
    }
    Py_RETURN_NONE;
}

static PyObject *watcher_interrupt(Watcher *w, PyObject *Py_UNUSED(ignored)) {
    Tripper *t = w->tripper;
    if (t != NULL) { /* set under `lock`: the wait either sees it before it waits or is signalled */
        pthread_mutex_lock(&t->lock);
        __atomic_store_n(&t->interrupted, 1, __ATOMIC_RELEASE);
        signal_unlocked(t, &t->wake);
    }
    Py_RETURN_NONE;
}

static Tripper *new_tripper(Watcher *w) {
    Tripper *t = PyMem_RawCalloc(1, sizeof(Tripper));
    pthread_condattr_t attributes;
    if (t == NULL || pthread_condattr_init(&attributes) != 0) {
        PyMem_RawFree(t);
        PyErr_NoMemory();
        return NULL;
    }
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&t->wake, &attributes);
    pthread_cond_init(&t->answered, &attributes);
    pthread_condattr_destroy(&attributes);
    pthread_mutex_init(&t->lock, NULL);
    t->watcher = w;
    t->rng = w->rng ^ 0x9E3779B97F4A7C15ULL;
    return t;
}

static int watcher_init(Watcher *w, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"ident", "native_id", "period_s", "late_s", "max_backoff_s", "trips", NULL};
    int trips = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "klddd|p", keywords, &w->ident, &w->native_id, &w->period_s,
                                     &w->late_s, &w->max_backoff_s, &trips)) {
        return -1;
    }
    if (w->tripper != NULL || w->sched_fd > 0) {
        PyErr_SetString(PyExc_RuntimeError, "a Watcher is initialized once");
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
    w->interpreter = PyInterpreterState_Get();
    w->thread_state = thread_state_of(w->interpreter, w->ident);
    clear(&w->last);
    if (trips && (w->tripper = new_tripper(w)) == NULL) {
        return -1;
    }
    return 0;
}

static void watcher_dealloc(Watcher *w) {
    Tripper *t = w->tripper;
    if (t != NULL) {
        stop_tripping(t);
        free_tripper(t);
    }
    if (w->sched_fd > 0) { /* 0: never opened (the object is zeroed before init; stdin is not ours) */
        close(w->sched_fd);
    }
    release(&w->last);
    release(&w->next);
    Py_XDECREF(w->key);
    Py_TYPE(w)->tp_free((PyObject *)w);
}

static PyMethodDef watcher_methods[] = {
    {"wait", (PyCFunction)watcher_wait, METH_VARARGS,
     "wait(timeout_s, known=None): the thread's stack, ((code, line), ...) innermost first, once it changed "
     "or timeout_s passed, or known[key] where the stack's key is in the dict known; None when the thread "
     "has no frame any more."},
    {"interrupt", (PyCFunction)watcher_interrupt, METH_NOARGS,
     "interrupt(): a tripping Watcher's current wait (else its next one) returns now, as at its timeout "
     "(the queued samples first); other Watchers' waits are not interrupted (they end at a change or their timeout)."},
    {"close", (PyCFunction)watcher_close, METH_NOARGS,
     "close(): a tripping Watcher stops asking its thread for samples (the next wait starts again)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef watcher_members[] = {
    {"samples", T_ULONGLONG, offsetof(Watcher, samples), READONLY, "samples taken so far"},
    {"compared", T_ULONGLONG, offsetof(Watcher, compared), READONLY, "samples that took the GIL to compare the stack"},
    {"returned", T_ULONGLONG, offsetof(Watcher, returned), READONLY, "stacks wait() returned"},
    {"pending_wakes", T_ULONGLONG, offsetof(Watcher, pending_wakes), READONLY,
     "wake-ups of a tripping Watcher's thread that found its ask not answered yet (the thread in a C call "
     "or blocked): one per block where the thread is blocked (it parks then)"},
    {"cpu_ns", T_LONGLONG, offsetof(Watcher, cpu_ns), READONLY,
     "the thread's CPU time (ns) as of the last sample, -1 where it cannot be read"},
    {"wanted_ns", T_LONGLONG, offsetof(Watcher, wanted_ns), READONLY,
     "the thread's time on a CPU or runnable (ns) as of the last return, -1 where unknown"},
    {"sampled_ns", T_LONGLONG, offsetof(Watcher, sampled_ns), READONLY,
     "when (time.monotonic_ns()) the sample that returned last was taken, before the wait for the GIL: "
     "the caller's event may open later"},
    {"depth", T_PYSSIZET, offsetof(Watcher, depth), READONLY, "frames of the stack returned last"},
    {"seen_blocked_ns", T_LONGLONG, offsetof(Watcher, seen_blocked_ns), READONLY,
     "as of the sample returned last, a tripping Watcher's total of the times (ns) it found its thread "
     "blocked in a call (an ask answered over 0.1 ms late, less the thread's time on a CPU or runnable "
     "meanwhile), each counted with the run of the stack read then; 0 for other Watchers"},
    {"held_ns", T_LONGLONG, offsetof(Watcher, held_ns), READONLY,
     "how long (ns) the calling thread held the GIL from its first wait up to its latest release of it"},
    {"key", T_OBJECT, offsetof(Watcher, key), READONLY,
     "the stack returned last as bytes, each frame's code object (its address) and line: equal keys are "
     "equal stacks while their code objects live (None before the first return)"},
    {"kept", T_PYSSIZET, offsetof(Watcher, kept), READONLY,
     "outermost frames of the stack returned last equal (code and line) to those of the one before"},
    {NULL, 0, 0, 0, NULL},
};

static PyObject *watcher_queued(Watcher *w, void *Py_UNUSED(closure)) {
    return PyLong_FromLong(w->tripper != NULL ? w->tripper->count : 0);
}

static PyGetSetDef watcher_getset[] = {
    {"queued", (getter)watcher_queued, NULL,
     "samples a tripping watcher recorded that wait() has not returned yet (a wait(0) returns the next)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
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
    .tp_getset = watcher_getset,
};

static PyObject *stack_key(PyObject *Py_UNUSED(module), PyObject *arg) {
    if (!PyFrame_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "stack_key(frame): a frame object");
        return NULL;
    }
    Py_ssize_t depth = 0;
    for (PyFrameObject *frame = (PyFrameObject *)Py_NewRef(arg), *back; frame != NULL; frame = back) {
        depth++;
        back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
    }
    PyObject *key = new_key(depth);
    PyFrameObject *frame = key == NULL ? NULL : (PyFrameObject *)Py_NewRef(arg);
    for (Py_ssize_t i = 0; frame != NULL; i++) { /* the same frames: no Python ran since they were counted */
        PyCodeObject *code = PyFrame_GetCode(frame);
        set_key_frame(key, i, code, last_instruction(frame));
        Py_DECREF(code); /* its frame holds it while the key is made */
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    return key;
}

static PyMethodDef module_methods[] = {
    {"stack_key", stack_key, METH_O,
     "stack_key(frame): bytes naming frame's stack, code object and last instruction per frame (see the header)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_stack_watch", "Waits for a thread's Python stack to change (the stack sampler's loop).", -1,
    module_methods,
};

/* A child forked while a Watcher tripped has no tripping thread: a Watcher of its own may trip. */
static void forget_tripping(void) {
    tripping = NULL;
}

PyMODINIT_FUNC PyInit__stack_watch(void) {
    if (PyType_Ready(&WatcherType) < 0) {
        return NULL;
    }
    if (pthread_atfork(NULL, NULL, forget_tripping) != 0) {
        PyErr_SetString(PyExc_OSError, "pthread_atfork failed");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "Watcher", (PyObject *)&WatcherType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
