/* break_eval(interpreter): tells the interpreter's main thread to check for pending calls at its next
 * check for pending work (a call's return, a loop's jump), for the stack sampler's loop
 * (collectors/_stack_watch.c), which asks the main thread for a pending call from a thread of its own.
 *
 * Up to Python 3.12 a pending call asked from a thread other than the main one sets no flag that the
 * main thread checks until it next takes the GIL: Py_AddPendingCall computes the interpreter's "eval
 * breaker" for the thread asking, which cannot run pending calls. The flag is set here, as CPython
 * sets it for its own signals on Windows; a thread other than the main one that checks it first finds
 * nothing to do and checks again until the main thread has run the call. From 3.13 on the main thread
 * is told by Py_AddPendingCall itself, and this does nothing. The interpreter's internal header is
 * needed for it, so this file is compiled apart (Py_BUILD_CORE) from the sampler's loop; where a
 * Python's headers lack it, this does nothing too: the main thread runs the call once it next takes
 * the GIL, and its emitter reads its stack itself every 20 ms meanwhile. */
#define Py_BUILD_CORE 1
#include <Python.h>

#if PY_VERSION_HEX >= 0x030A0000 && PY_VERSION_HEX < 0x030D0000 && __has_include(<internal/pycore_interp.h>)
#include <internal/pycore_interp.h>

__attribute__((visibility("hidden"))) void break_eval(PyInterpreterState *interpreter) {
    _Py_atomic_store_relaxed(&interpreter->ceval.eval_breaker, 1);
}
#else
__attribute__((visibility("hidden"))) void break_eval(PyInterpreterState *interpreter) {
    (void)interpreter;
}
#endif
