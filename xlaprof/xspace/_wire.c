/* The XLine/XEvent wire decoding of xlaprof/xspace/wire.py, one pass in C.
 *
 * Contract: the same results as wire.py's numpy functions of the same names, for any bytes:
 * - split_line(buf, size) -> (consumed, starts, ends, others): starts/ends as bytearrays of
 *   int64 (the payload ranges of the line's complete event fields, in order), others a list of
 *   (start, end) of its other complete fields, consumed where the first cut field begins.
 * - decode_events(buf, starts, ends) -> (metadata_id, offset_ps, duration_ps, aggregated,
 *   stat_event, stat_start, stat_len): bytearrays of int64 (aggregated: of uint8 0/1); the stats
 *   in encoding order (wire.py's numpy walk gives them by field position; callers sort by start).
 * Every read stays inside ``buf`` (the data and its zero padding); wire bytes that do not
 * decode raise ValueError with wire.py's messages: a tag no serializer writes (field number 0 or
 * past 2^29-1, wire types 3, 4, 6, 7) where it is met, and a piece of a line with more than
 * MAX_OTHER_FIELDS fields besides its events before it is listed. The decoding runs without the GIL (the
 * reader decodes a capture's planes on two threads).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EVENTS_TAG 0x22 /* XLine.events: field 4, length-delimited */
#define MAX_OTHER_FIELDS 1024 /* a line's fields besides its events (a real one has six) */
#define MAX_FIELD_NUMBER 0x1FFFFFFFu

static int valid_number(uint64_t tag) { return (tag >> 3) >= 1 && (tag >> 3) <= MAX_FIELD_NUMBER; }

typedef struct {
    int64_t *data;
    Py_ssize_t size, capacity;
} Column;

/* Appends value; -1 when memory runs out (no Python call: the GIL may be released). */
static int column_push(Column *c, int64_t value) {
    if (c->size == c->capacity) {
        Py_ssize_t capacity = c->capacity ? 2 * c->capacity : 1024;
        int64_t *grown = realloc(c->data, (size_t)capacity * sizeof(int64_t));
        if (!grown) return -1;
        c->data = grown;
        c->capacity = capacity;
    }
    c->data[c->size++] = value;
    return 0;
}

static PyObject *column_bytes(Column *c) {
    return PyByteArray_FromStringAndSize((const char *)c->data, c->size * (Py_ssize_t)sizeof(int64_t));
}

/* The varint at buf[*pos] (bytes before limit only); 0 on success, -1 past limit, -2 over 10 bytes. */
static int varint(const uint8_t *buf, Py_ssize_t limit, Py_ssize_t *pos, uint64_t *value) {
    uint64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (*pos >= limit) return -1;
        uint8_t byte = buf[(*pos)++];
        v |= (uint64_t)(byte & 0x7F) << (7 * i);
        if (byte < 0x80) {
            *value = v;
            return 0;
        }
    }
    return -2;
}

/* Where the field at buf[pos] ends, reading the data before limit; -1 when it is cut there,
 * -2 for an unsupported wire type or an invalid field number, -3 for an over-long varint. */
static Py_ssize_t field_end(const uint8_t *buf, Py_ssize_t limit, Py_ssize_t pos) {
    uint64_t tag, value;
    int got = varint(buf, limit, &pos, &tag);
    if (got) return got == -1 ? -1 : -3;
    if (!valid_number(tag)) return -2;
    switch (tag & 7) {
    case 0:
        got = varint(buf, limit, &pos, &value);
        return got ? (got == -1 ? -1 : -3) : pos;
    case 1:
        return pos + 8 <= limit ? pos + 8 : -1;
    case 5:
        return pos + 4 <= limit ? pos + 4 : -1;
    case 2:
        got = varint(buf, limit, &pos, &value);
        if (got) return got == -1 ? -1 : -3;
        return value <= (uint64_t)(limit - pos) ? pos + (Py_ssize_t)value : -1;
    default:
        return -2;
    }
}

static PyObject *split_line(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "y*n", &view, &size)) return NULL;
    if (size < 0 || size > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "size outside the buffer");
        return NULL;
    }
    const uint8_t *buf = view.buf;
    Column starts = {0}, ends = {0}, other_starts = {0}, other_ends = {0};
    PyObject *others = NULL, *result = NULL;
    Py_ssize_t pos = 0;
    const char *error = NULL;
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    while (pos < size) {
        Py_ssize_t end = field_end(buf, size, pos);
        if (end == -1) break; /* cut: read on from here */
        if (end == -2) { error = "an invalid field tag"; break; }
        if (end == -3) { error = "an over-long varint"; break; }
        if (buf[pos] == EVENTS_TAG) {
            Py_ssize_t at = pos + 1;
            uint64_t length;
            varint(buf, size, &at, &length); /* field_end decoded it */
            nomem = column_push(&starts, at) || column_push(&ends, end);
        } else if (other_starts.size == MAX_OTHER_FIELDS) {
            error = "a line with more than 1024 fields besides its events";
            break;
        } else {
            nomem = column_push(&other_starts, pos) || column_push(&other_ends, end);
        }
        if (nomem) break;
        pos = end;
    }
    Py_END_ALLOW_THREADS
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    if (error) {
        PyErr_SetString(PyExc_ValueError, error);
        goto done;
    }
    others = PyList_New(other_starts.size);
    if (!others) goto done;
    for (Py_ssize_t k = 0; k < other_starts.size; k++) {
        PyObject *pair = Py_BuildValue("(LL)", (long long)other_starts.data[k], (long long)other_ends.data[k]);
        if (!pair) goto done;
        PyList_SET_ITEM(others, k, pair);
    }
    PyObject *s = column_bytes(&starts), *e = column_bytes(&ends);
    if (s && e) result = Py_BuildValue("(nOOO)", pos < size ? pos : size, s, e, others);
    Py_XDECREF(s);
    Py_XDECREF(e);
done:
    Py_XDECREF(others);
    free(starts.data);
    free(ends.data);
    free(other_starts.data);
    free(other_ends.data);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *decode_events(PyObject *self, PyObject *args) {
    Py_buffer view, starts_view, ends_view;
    if (!PyArg_ParseTuple(args, "y*y*y*", &view, &starts_view, &ends_view)) return NULL;
    const uint8_t *buf = view.buf;
    const Py_ssize_t limit = view.len;
    const int64_t *starts = starts_view.buf, *ends = ends_view.buf;
    const Py_ssize_t n = starts_view.len / (Py_ssize_t)sizeof(int64_t);
    Column fields[3] = {{0}, {0}, {0}}, stat_event = {0}, stat_start = {0}, stat_len = {0};
    uint8_t *aggregated = NULL;
    PyObject *result = NULL;
    const char *error = NULL;
    if (ends_view.len != starts_view.len) {
        error = "starts and ends differ in length";
        goto done;
    }
    aggregated = calloc((size_t)(n ? n : 1), 1);
    if (!aggregated) {
        PyErr_NoMemory();
        goto done;
    }
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !error && !nomem; i++) {
        Py_ssize_t pos = starts[i], end = ends[i];
        int64_t last[3] = {0, 0, 0};
        if (pos < 0 || end > limit) {
            error = "a field runs past the end of its message";
            break;
        }
        while (pos < end) {
            uint64_t tag, value = 0;
            int got = varint(buf, limit, &pos, &tag);
            if (got) {
                error = got == -1 ? "a field runs past the end of its message" : "a varint longer than 10 bytes";
                break;
            }
            Py_ssize_t payload = pos, next = -1; /* payload: past the value (a length's data) */
            int wire = (int)(tag & 7);
            if (!valid_number(tag)) {
                error = "an invalid field tag";
                break;
            }
            if (wire == 0 || wire == 2) {
                got = varint(buf, limit, &pos, &value);
                if (got) {
                    error = got == -1 ? "a field runs past the end of its message" : "a varint longer than 10 bytes";
                    break;
                }
                payload = pos;
                next = wire == 0 ? payload : (value <= (uint64_t)(limit - payload) ? payload + (Py_ssize_t)value : -1);
            } else if (wire == 1 || wire == 5) {
                int width = wire == 1 ? 8 : 4;
                if (pos + width <= limit) {
                    for (int k = width - 1; k >= 0; k--) value = value << 8 | buf[pos + k]; /* little-endian */
                    payload = next = pos + width;
                }
            } else {
                error = "an invalid field tag";
                break;
            }
            if (next < 0 || next > end) {
                error = "a field runs past the end of its message";
                break;
            }
            uint64_t number = tag >> 3;
            if (number >= 1 && number <= 3) {
                last[number - 1] = (int64_t)value;
            } else if (number == 4) {
                if ((nomem = column_push(&stat_event, i) || column_push(&stat_start, payload) ||
                             column_push(&stat_len, (int64_t)value)))
                    break;
            } else if (number == 5) {
                aggregated[i] = 1;
            }
            pos = next;
        }
        if (error || nomem) break;
        for (int k = 0; k < 3 && !nomem; k++) nomem = column_push(&fields[k], last[k]);
    }
    Py_END_ALLOW_THREADS
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    if (error) goto done;
    PyObject *out[7] = {column_bytes(&fields[0]), column_bytes(&fields[1]), column_bytes(&fields[2]),
                        PyByteArray_FromStringAndSize((const char *)aggregated, n),
                        column_bytes(&stat_event), column_bytes(&stat_start), column_bytes(&stat_len)};
    int ok = 1;
    for (int k = 0; k < 7; k++) ok &= out[k] != NULL;
    if (ok) result = PyTuple_Pack(7, out[0], out[1], out[2], out[3], out[4], out[5], out[6]);
    for (int k = 0; k < 7; k++) Py_XDECREF(out[k]);
done:
    if (error && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, error);
    for (int k = 0; k < 3; k++) free(fields[k].data);
    free(stat_event.data);
    free(stat_start.data);
    free(stat_len.data);
    free(aggregated);
    PyBuffer_Release(&view);
    PyBuffer_Release(&starts_view);
    PyBuffer_Release(&ends_view);
    return result;
}

static PyMethodDef methods[] = {
    {"split_line", split_line, METH_VARARGS, "A piece of an XLine's encoding split into its complete fields."},
    {"decode_events", decode_events, METH_VARARGS, "The XEvents encoded at the given payload ranges."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wire", NULL, -1, methods};

PyMODINIT_FUNC PyInit__wire(void) { return PyModule_Create(&module); }
