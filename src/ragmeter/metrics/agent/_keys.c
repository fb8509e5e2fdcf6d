/* Typed JSON keys of tool calls: the compiled path of _calls.typed_key_python, byte for byte.
 *
 * typed_key(value) -> bytes, equal for two values exactly when they are equal as typed JSON:
 *   None      n
 *   bool      t | f                       (true is not 1)
 *   int       i<decimal>;                 (a float with an integral value too: 1 == 1.0)
 *   float     d<repr>;                    (the others: 0.5, inf, nan)
 *   str       s<utf-8 length>:<utf-8>     (lone surrogates kept, as "surrogatepass")
 *   list      [<items>]
 *   dict      {<key><value>...}           (entries sorted by their encoded key, then value)
 * Every item delimits itself, so no escaping is needed. Any other type (a tuple, a Mapping
 * that is not a dict, a subclass) is encoded by the Python function given to setup().
 *
 * call_keys(calls) -> [typed_key([name, arguments]) for each call], a call being a tuple
 * whose items 0 and 1 are its name and arguments (a ToolCall).
 *
 * A key is one bytes object: cheap to hash, compare and free, and never tracked by the cycle
 * collector. Nesting is bounded by the row limits before keys are made; the recursion is
 * still guarded (Py_EnterRecursiveCall).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static PyObject *FALLBACK = NULL; /* value -> bytes, for the types not handled here */

#define INLINE_BYTES 512

/* Bytes being written: on the stack while they fit, on the heap beyond. */
typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    char inline_[INLINE_BYTES];
} Buffer;

static void buffer_init(Buffer *buf) {
    buf->data = buf->inline_;
    buf->len = 0;
    buf->cap = INLINE_BYTES;
}

static void buffer_free(Buffer *buf) {
    if (buf->data != buf->inline_) {
        PyMem_Free(buf->data);
    }
    buffer_init(buf);
}

static int reserve(Buffer *buf, Py_ssize_t more) {
    if (buf->len + more <= buf->cap) {
        return 0;
    }
    Py_ssize_t cap = buf->cap;
    while (cap < buf->len + more) {
        cap *= 2;
    }
    char *grown = PyMem_Malloc((size_t)cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(grown, buf->data, (size_t)buf->len);
    if (buf->data != buf->inline_) {
        PyMem_Free(buf->data);
    }
    buf->data = grown;
    buf->cap = cap;
    return 0;
}

static int put(Buffer *buf, const char *bytes, Py_ssize_t n) {
    if (reserve(buf, n) < 0) {
        return -1;
    }
    memcpy(buf->data + buf->len, bytes, (size_t)n);
    buf->len += n;
    return 0;
}

static int put_char(Buffer *buf, char c) { return put(buf, &c, 1); }

/* tag, the text of a Python object (str() of an int, say), terminator */
static int put_text_of(Buffer *buf, char tag, PyObject *text, char end) {
    if (text == NULL) {
        return -1;
    }
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &n);
    int failed = utf8 == NULL || put_char(buf, tag) < 0 || put(buf, utf8, n) < 0 ||
                 put_char(buf, end) < 0;
    Py_DECREF(text);
    return failed ? -1 : 0;
}

/* i<decimal>; of a machine integer */
static int put_small(Buffer *buf, long long value) {
    char text[24];
    char *end = text + sizeof text, *p = end;
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    *--p = ';';
    do {
        *--p = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0) {
        *--p = '-';
    }
    *--p = 'i';
    return put(buf, p, end - p);
}

static int put_int(Buffer *buf, PyObject *value) {
    int overflow = 0;
    long long small = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (small == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow) {
        return put_text_of(buf, 'i', PyObject_Str(value), ';');
    }
    return put_small(buf, small);
}

static int put_float(Buffer *buf, double x) {
    if (isfinite(x) && floor(x) == x) { /* integral: the same key as the int */
        if (fabs(x) < 9.0e18) {
            return put_small(buf, (long long)x);
        }
        PyObject *whole = PyLong_FromDouble(x);
        if (whole == NULL) {
            return -1;
        }
        int failed = put_int(buf, whole);
        Py_DECREF(whole);
        return failed;
    }
    char *text = PyOS_double_to_string(x, 'r', 0, 0, NULL);
    if (text == NULL) {
        return -1;
    }
    int failed = put_char(buf, 'd') < 0 || put(buf, text, (Py_ssize_t)strlen(text)) < 0 ||
                 put_char(buf, ';') < 0;
    PyMem_Free(text);
    return failed ? -1 : 0;
}

static int put_str(Buffer *buf, PyObject *value) {
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(value, &n);
    PyObject *encoded = NULL;
    if (utf8 == NULL) { /* a lone surrogate: kept, as Python's "surrogatepass" */
        PyErr_Clear();
        encoded = PyUnicode_AsEncodedString(value, "utf-8", "surrogatepass");
        if (encoded == NULL) {
            return -1;
        }
        utf8 = PyBytes_AS_STRING(encoded);
        n = PyBytes_GET_SIZE(encoded);
    }
    char head[24];
    char *end = head + sizeof head, *p = end;
    Py_ssize_t rest = n;
    *--p = ':';
    do {
        *--p = (char)('0' + rest % 10);
        rest /= 10;
    } while (rest);
    *--p = 's';
    int failed = put(buf, p, end - p) < 0 || put(buf, utf8, n) < 0;
    Py_XDECREF(encoded);
    return failed ? -1 : 0;
}

static int put_value(Buffer *buf, PyObject *value);

static int put_list(Buffer *buf, PyObject *value) {
    if (put_char(buf, '[') < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
        PyObject *item = PyList_GET_ITEM(value, i);
        Py_INCREF(item);
        int failed = put_value(buf, item);
        Py_DECREF(item);
        if (failed < 0) {
            return -1;
        }
    }
    return put_char(buf, ']');
}

#define INLINE_ENTRIES 16

typedef struct {
    Py_ssize_t start;  /* offset of the entry (its key, then its value) */
    Py_ssize_t key;    /* length of the key's encoding */
    Py_ssize_t length; /* length of the whole entry */
    const char *base;  /* the bytes the offsets are in, while sorting */
} Entry;

static int compare_bytes(const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb) {
    int c = memcmp(a, b, (size_t)(na < nb ? na : nb));
    if (c != 0) {
        return c;
    }
    return na < nb ? -1 : (na > nb ? 1 : 0);
}

/* By the key's bytes, then the value's: the order Python's sorted() gives (key, value) pairs
 * of bytes. */
static int compare_entries(const void *pa, const void *pb) {
    const Entry *a = pa, *b = pb;
    int c = compare_bytes(a->base + a->start, a->key, b->base + b->start, b->key);
    if (c != 0) {
        return c;
    }
    return compare_bytes(a->base + a->start + a->key, a->length - a->key,
                         b->base + b->start + b->key, b->length - b->key);
}

static int put_dict(Buffer *buf, PyObject *value) {
    if (put_char(buf, '{') < 0) {
        return -1;
    }
    Py_ssize_t count = PyDict_GET_SIZE(value);
    Py_ssize_t first = buf->len;
    Entry few[INLINE_ENTRIES];
    Entry *entries = NULL;
    if (count > INLINE_ENTRIES) {
        entries = PyMem_Malloc((size_t)count * sizeof(Entry));
        if (entries == NULL) {
            PyErr_NoMemory();
            return -1;
        }
    } else if (count > 1) {
        entries = few;
    }
    Py_ssize_t pos = 0, n = 0;
    PyObject *name, *item;
    int failed = 0;
    while (!failed && PyDict_Next(value, &pos, &name, &item)) {
        if (n >= count) { /* grew under a fallback */
            PyErr_SetString(PyExc_RuntimeError, "a dict changed while its key was made");
            failed = 1;
            break;
        }
        Py_INCREF(name);
        Py_INCREF(item);
        Py_ssize_t start = buf->len;
        failed = put_value(buf, name) < 0;
        Py_ssize_t key = buf->len - start;
        failed = failed || put_value(buf, item) < 0;
        Py_DECREF(name);
        Py_DECREF(item);
        if (entries != NULL && !failed) {
            entries[n] = (Entry){start, key, buf->len - start, NULL};
        }
        n++;
    }
    if (!failed && entries != NULL && n > 1) {
        Py_ssize_t size = buf->len - first;
        char small[INLINE_BYTES];
        char *copy = size <= INLINE_BYTES ? small : PyMem_Malloc((size_t)size);
        if (copy == NULL) {
            PyErr_NoMemory();
            failed = 1;
        } else {
            memcpy(copy, buf->data + first, (size_t)size);
            for (Py_ssize_t i = 0; i < n; i++) {
                entries[i].start -= first;
                entries[i].base = copy;
            }
            qsort(entries, (size_t)n, sizeof(Entry), compare_entries);
            char *out = buf->data + first;
            for (Py_ssize_t i = 0; i < n; i++) {
                memcpy(out, copy + entries[i].start, (size_t)entries[i].length);
                out += entries[i].length;
            }
            if (copy != small) {
                PyMem_Free(copy);
            }
        }
    }
    if (entries != few) {
        PyMem_Free(entries);
    }
    return failed ? -1 : put_char(buf, '}');
}

static int put_fallback(Buffer *buf, PyObject *value) {
    PyObject *encoded = PyObject_CallOneArg(FALLBACK, value);
    if (encoded == NULL) {
        return -1;
    }
    int failed;
    if (!PyBytes_Check(encoded)) {
        PyErr_SetString(PyExc_TypeError, "the typed key fallback must return bytes");
        failed = -1;
    } else {
        failed = put(buf, PyBytes_AS_STRING(encoded), PyBytes_GET_SIZE(encoded));
    }
    Py_DECREF(encoded);
    return failed;
}

static int put_value(Buffer *buf, PyObject *value) {
    if (value == Py_None) {
        return put_char(buf, 'n');
    }
    if (value == Py_True || value == Py_False) {
        return put_char(buf, value == Py_True ? 't' : 'f');
    }
    if (PyUnicode_CheckExact(value)) {
        return put_str(buf, value);
    }
    if (PyLong_CheckExact(value)) {
        return put_int(buf, value);
    }
    if (PyFloat_CheckExact(value)) {
        return put_float(buf, PyFloat_AS_DOUBLE(value));
    }
    if (!PyDict_CheckExact(value) && !PyList_CheckExact(value)) {
        return put_fallback(buf, value);
    }
    if (Py_EnterRecursiveCall(" while making a typed key")) {
        return -1;
    }
    int failed = PyDict_CheckExact(value) ? put_dict(buf, value) : put_list(buf, value);
    Py_LeaveRecursiveCall();
    return failed;
}

static int ready(void) {
    if (FALLBACK == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_keys.setup() was not called");
        return 0;
    }
    return 1;
}

static PyObject *typed_key(PyObject *self, PyObject *value) {
    if (!ready()) {
        return NULL;
    }
    Buffer buf;
    buffer_init(&buf);
    PyObject *key = NULL;
    if (put_value(&buf, value) == 0) {
        key = PyBytes_FromStringAndSize(buf.data, buf.len);
    }
    buffer_free(&buf);
    return key;
}

static PyObject *call_keys(PyObject *self, PyObject *calls) {
    if (!ready()) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(calls, "calls must be a sequence");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyList_New(n);
    Buffer buf;
    buffer_init(&buf);
    if (out == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *call = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(call) || PyTuple_GET_SIZE(call) < 2) {
            PyErr_SetString(PyExc_TypeError, "a call must be a (name, arguments, ...) tuple");
            goto fail;
        }
        buf.len = 0;
        if (put_char(&buf, '[') < 0 || put_value(&buf, PyTuple_GET_ITEM(call, 0)) < 0 ||
            put_value(&buf, PyTuple_GET_ITEM(call, 1)) < 0 || put_char(&buf, ']') < 0) {
            goto fail;
        }
        PyObject *key = PyBytes_FromStringAndSize(buf.data, buf.len);
        if (key == NULL) {
            goto fail;
        }
        PyList_SET_ITEM(out, i, key);
    }
    buffer_free(&buf);
    Py_DECREF(seq);
    return out;
fail:
    buffer_free(&buf);
    Py_DECREF(seq);
    Py_XDECREF(out);
    return NULL;
}

static PyObject *setup(PyObject *self, PyObject *fallback) {
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "the fallback must be callable");
        return NULL;
    }
    Py_INCREF(fallback);
    Py_XSETREF(FALLBACK, fallback);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_O, "setup(fallback): the Python encoding of the other types."},
    {"typed_key", typed_key, METH_O, "typed_key(value) -> bytes: the value's typed JSON key."},
    {"call_keys", call_keys, METH_O, "call_keys(calls) -> [typed_key([name, arguments]), ...]."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_keys", "Typed JSON keys of tool calls, compiled.", -1, methods,
};

PyMODINIT_FUNC PyInit__keys(void) { return PyModule_Create(&module); }
