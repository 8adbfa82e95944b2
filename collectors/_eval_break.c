/* Two nudges to the interpreter for the stack sampler's loop (collectors/_stack_watch.c), which waits
 * without the GIL in threads of its own.
 *
 * break_eval(interpreter, main_thread) tells the interpreter's main thread to check for pending calls
 * at its next check for pending work (a call's return, a loop's jump): the loop asks the main thread
 * for a pending call.
 *
 * Up to Python 3.12 a pending call asked from a thread other than the main one sets no flag that the
 * main thread checks until it next takes the GIL: Py_AddPendingCall computes the interpreter's "eval
 * breaker" for the thread asking, which cannot run pending calls, and each thread taking the GIL
 * computes it again for itself. So the flag matters only while the main thread holds the GIL (it runs
 * Python, or a C call that keeps the GIL), and is set here then only, as CPython sets it for its own
 * signals on Windows. A main thread without the GIL (in a C call that let it go, or waiting for it)
 * is told as it takes the GIL back; setting the flag then would have the thread holding the GIL meanwhile
 * find nothing to do at each of its checks until the main thread ran the call (5-10% slower Python
 * on that thread, `bench/bench_other_threads.py`). From 3.13 on the main thread is told by
 * Py_AddPendingCall itself, and this does nothing.
 *
 * ask_for_the_gil(interpreter, thread) asks `thread`, where it holds the GIL, to let it go at its next
 * check, as a thread waiting for the GIL does after a whole switch interval with no hand-off; the
 * caller then takes the GIL. The waiter's own request comes too late for a thread that runs Python
 * between short calls letting go of the GIL (a tokenizer's, a torch op's): each release starts its
 * interval over, and it got the GIL only at such a call, so its samples named the call, never the
 * Python between (0-1% of the samples where that Python ran 43% of the time:
 * tests/unit/test_stack_watch.py). The thread, asked, waits until another thread took the GIL
 * (CPython's forced switching), so the caller gets it next. A thread holding the GIL in a C call
 * lets it go on its return, as before. Up to 3.12 (3.13 keeps the request in each thread's state);
 * from 3.13 on this does nothing, and the caller waits its switch interval as before.
 *
 * The interpreter's internal headers are needed for both, so this file is compiled apart
 * (Py_BUILD_CORE) from the sampler's loop; where a Python's headers lack them, both do nothing: the
 * main thread runs the call once it next takes the GIL (its emitter reads its stack itself every 20
 * ms meanwhile), and a waiter for the GIL waits its switch interval. */
#define Py_BUILD_CORE 1
#include <Python.h>

#if PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030D0000 && __has_include(<internal/pycore_interp.h>)
#include <internal/pycore_gil.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_runtime.h>

static struct _gil_runtime_state *gil_of(PyInterpreterState *interpreter) {
#if PY_VERSION_HEX >= 0x030C0000
    return interpreter->ceval.gil;
#else
    (void)interpreter;
    return &_PyRuntime.ceval.gil;
#endif
}

/* Whether `thread` holds the interpreter's GIL (read without it: it may have changed since). */
static int holds_the_gil(PyInterpreterState *interpreter, PyThreadState *thread) {
    struct _gil_runtime_state *gil = gil_of(interpreter);
    return thread != NULL && _Py_atomic_load_relaxed(&gil->locked) == 1
           && (PyThreadState *)_Py_atomic_load_relaxed(&gil->last_holder) == thread;
}

__attribute__((visibility("hidden"))) void break_eval(PyInterpreterState *interpreter, PyThreadState *main_thread) {
    if (holds_the_gil(interpreter, main_thread)) {
        _Py_atomic_store_relaxed(&interpreter->ceval.eval_breaker, 1);
    }
}

__attribute__((visibility("hidden"))) void ask_for_the_gil(PyInterpreterState *interpreter, PyThreadState *thread) {
    if (holds_the_gil(interpreter, thread)) {
        _Py_atomic_store_relaxed(&interpreter->ceval.gil_drop_request, 1);
        _Py_atomic_store_relaxed(&interpreter->ceval.eval_breaker, 1);
    }
}
#else
__attribute__((visibility("hidden"))) void break_eval(PyInterpreterState *interpreter, PyThreadState *main_thread) {
    (void)interpreter;
    (void)main_thread;
}

__attribute__((visibility("hidden"))) void ask_for_the_gil(PyInterpreterState *interpreter, PyThreadState *thread) {
    (void)interpreter;
    (void)thread;
}
#endif
