/* break_eval(interpreter, main_thread): tells the interpreter's main thread to check for pending calls
 * at its next check for pending work (a call's return, a loop's jump), for the stack sampler's loop
 * (collectors/_stack_watch.c), which asks the main thread for a pending call from a thread of its own.
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
 * Py_AddPendingCall itself, and this does nothing. The interpreter's internal headers are needed for
 * it, so this file is compiled apart (Py_BUILD_CORE) from the sampler's loop; where a Python's headers
 * lack them, this does nothing too: the main thread runs the call once it next takes the GIL, and its
 * emitter reads its stack itself every 20 ms meanwhile. */
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

__attribute__((visibility("hidden"))) void break_eval(PyInterpreterState *interpreter, PyThreadState *main_thread) {
    struct _gil_runtime_state *gil = gil_of(interpreter);
    if (main_thread != NULL && _Py_atomic_load_relaxed(&gil->locked) == 1
        && (PyThreadState *)_Py_atomic_load_relaxed(&gil->last_holder) == main_thread) {
        _Py_atomic_store_relaxed(&interpreter->ceval.eval_breaker, 1);
    }
}
#else
__attribute__((visibility("hidden"))) void break_eval(PyInterpreterState *interpreter, PyThreadState *main_thread) {
    (void)interpreter;
    (void)main_thread;
}
#endif
